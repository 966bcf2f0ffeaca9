"""Recall traces as the recall log stores them: ids and scores, not copies of stored text.

A trace (what ``explain(recall_id)`` replays) names the sources and memories a recall ranked,
chose and left out, many of them with their text. Stored as produced, that came to ~42 KB per
recall, mostly text the sources table already holds and the same key names repeated per entry.
The stored form (``TRACE_FORMAT``) is lossless for everything but that text:

* an entry ``{"id": X, "text": T, ...}`` whose ``T`` is the stored text of source or memory
  ``X`` (or its start) keeps ``"text_of": "source" | "memory"`` (and ``"text_chars"`` for a
  prefix) instead of ``T``; :func:`fill` puts the text back at read time from the row of that
  id, so a source forgotten since cannot come back through ``explain``: its entry says so;
* a list of dicts sharing one key order is a table ``{"_cols": [...], "_rows": [[...], ...]}``
  (an entry with other keys stays a dict among the rows);
* floats keep 6 significant digits.

Text that is not a stored row's text (a page title, an excerpt) is kept as it is.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

TRACE_FORMAT = 2
TEXT_OF, TEXT_CHARS = "text_of", "text_chars"
COLS, ROWS = "_cols", "_rows"
GONE = {"source": "this message has been forgotten since the recall; its text is gone",
        "memory": "this memory is no longer stored (forgotten, or replaced by a later curation)"}

Lookup = Callable[[list[str]], dict[str, str]]   # ids -> {id: stored text} of those still stored


def text_ids(obj: Any) -> list[str]:
    """Ids of the entries that carry a text (the candidates for :func:`compact`)."""
    out: dict[str, None] = {}
    _walk(obj, lambda d: out.setdefault(d["id"], None)
          if isinstance(d.get("id"), str) and isinstance(d.get("text"), str) else None)
    return list(out)


def compact(trace: dict, stored: dict[str, tuple[str, str]]) -> dict:
    """The stored form of ``trace``; ``stored`` maps an id to (``"source"`` | ``"memory"``,
    its stored text) for the ids :func:`text_ids` named that are still stored."""
    return dict(_pack(trace, stored), trace_format=TRACE_FORMAT)


def _pack(o: Any, stored: dict[str, tuple[str, str]]) -> Any:
    if isinstance(o, dict):
        d = {k: _pack(v, stored) for k, v in o.items()}
        i, t = o.get("id"), o.get("text")
        if isinstance(i, str) and isinstance(t, str) and i in stored and t:
            where, full = stored[i]
            if full.startswith(t):
                del d["text"]
                d[TEXT_OF] = where
                if len(t) < len(full):
                    d[TEXT_CHARS] = len(t)
        return d
    if isinstance(o, (list, tuple)):
        xs = [_pack(x, stored) for x in o]
        if len(xs) > 1 and all(isinstance(x, dict) and x for x in xs):
            shape, n = Counter(tuple(x) for x in xs).most_common(1)[0]
            if n > 1:
                return {COLS: list(shape), ROWS: [[x[k] for k in shape] if tuple(x) == shape
                                                  else x for x in xs]}
        return xs
    if isinstance(o, float):
        return float(f"{o:.6g}")
    return o


def expand(o: Any) -> Any:
    """Undo the tables of :func:`compact` (a trace stored before ``TRACE_FORMAT`` has none)."""
    if isinstance(o, dict):
        if set(o) == {COLS, ROWS} and isinstance(o[COLS], list) and isinstance(o[ROWS], list):
            cols = o[COLS]
            return [dict(zip(cols, map(expand, r))) if isinstance(r, list) else expand(r)
                    for r in o[ROWS]]
        return {k: expand(v) for k, v in o.items()}
    if isinstance(o, list):
        return [expand(x) for x in o]
    return o


def fill(trace: Any, sources: Lookup, memories: Lookup) -> Any:
    """Put the text back into an expanded trace, read now from the sources and memories by id;
    an entry whose row is gone gets ``text: None`` and a ``gone`` note instead."""
    want: dict[str, set[str]] = {"source": set(), "memory": set()}
    _walk(trace, lambda d: want.get(d.get(TEXT_OF, ""), set()).add(d["id"])
          if isinstance(d.get("id"), str) else None)
    found: dict[str, dict[Any, str]] = {"source": sources(sorted(want["source"])) if want["source"] else {},
             "memory": memories(sorted(want["memory"])) if want["memory"] else {}}

    def put(d: dict) -> None:
        where = d.pop(TEXT_OF, None)
        if where not in found:
            return
        n = d.pop(TEXT_CHARS, None)
        text = found[where].get(d.get("id"))
        d["text"] = text if text is None or not isinstance(n, int) else text[:n]
        if text is None:
            d["gone"] = GONE[where]

    _walk(trace, put)
    return trace


def _walk(o: Any, visit: Callable[[dict], Any]) -> None:
    if isinstance(o, dict):
        for v in o.values():
            _walk(v, visit)
        visit(o)
    elif isinstance(o, list):
        for x in o:
            _walk(x, visit)
