"""Recall traces as the recall log stores them: ids and scores, not copies of stored text.

A trace (what ``explain(recall_id)`` replays) names the sources and memories a recall ranked,
chose and left out, many of them with their text. Stored as produced, that came to ~42 KB per
recall, mostly text the sources table already holds and the same key names repeated per entry.
The stored form (``TRACE_FORMAT``) is lossless for everything but that text:

* an entry ``{"id": X, "text": T, ...}`` whose ``T`` is the stored text of source or memory
  ``X`` (or its start) keeps ``"text_of": "source" | "memory"`` (and ``"text_chars"`` for a
  prefix) instead of ``T``; :func:`fill` puts the text back at read time from the row of that
  id, so a source forgotten since cannot come back through ``explain``: its entry says so;
* such an entry's ``timestamp``, when it is that row's own (as a recall's items give it), keeps
  ``"time_of": "source" | "memory"`` instead and is read back from the row the same way;
* a list of the candidates a recall did not take (``left_out``, ``notes_dropped``, ...: the keys
  of ``LISTED``) keeps its first ``LISTED_MAX`` entries, the nearest misses (strategies list
  them best first), and ``<key>_listed`` says how many the trace listed (a strategy's own
  ``<key>_total``, where it gives one, counts all); every list of what the recall chose or
  returned is kept whole;
* a list of dicts sharing one key order is a table ``{"_cols": [...], "_rows": [[...], ...]}``
  (an entry with other keys stays a dict among the rows);
* floats keep 6 significant digits.

Text that is not a stored row's text (a page title, an excerpt) is kept as it is. So a record is
the ids, ranks and scores of a recall's decisions: with the column's compression
(``schema.TRACE_ENCODING``) ~4 KB on disk, not 6.4 KB (bench/README.md, "Disk per turn and
per recall").
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any, Callable

TRACE_FORMAT = 3
TEXT_OF, TEXT_CHARS, TIME_OF = "text_of", "text_chars", "time_of"
LISTED = ("left_out", "notes_dropped", "candidates", "universe_ids", "neighbourhood")
LISTED_MAX = 10   # entries kept of each such list (explain shows the nearest misses)
COLS, ROWS = "_cols", "_rows"
GONE = {"source": "this message has been forgotten since the recall; its text is gone",
        "memory": "this memory is no longer stored (forgotten, or replaced by a later curation)"}

Row = tuple[str, "datetime | None"]               # a stored row's text and timestamp
Lookup = Callable[[list[str]], dict[str, Row]]   # ids -> {id: (text, timestamp)} of those stored


def iso(ts: datetime | None) -> str | None:
    """A timestamp as a recall's items give it (pydantic's JSON form of an aware datetime)."""
    return None if ts is None else ts.isoformat().replace("+00:00", "Z")


def text_ids(obj: Any) -> list[str]:
    """Ids of the entries that carry a text (the candidates for :func:`compact`)."""
    out: dict[str, None] = {}
    _walk(obj, lambda d: out.setdefault(d["id"], None)
          if isinstance(d.get("id"), str) and isinstance(d.get("text"), str) else None)
    return list(out)


def compact(trace: dict, stored: dict[str, tuple[str, Row]]) -> dict:
    """The stored form of ``trace``; ``stored`` maps an id to (``"source"`` | ``"memory"``,
    its stored (text, timestamp)) for the ids :func:`text_ids` named that are still stored."""
    return dict(_pack(trace, stored), trace_format=TRACE_FORMAT)


def _listed(o: dict) -> dict:
    """``o`` with each of its ``LISTED`` lists cut to ``LISTED_MAX`` entries (and their count)."""
    out = dict(o)
    for k in LISTED:
        v = o.get(k)
        if isinstance(v, list) and len(v) > LISTED_MAX:
            out[k] = v[:LISTED_MAX]
            out[f"{k}_listed"] = len(v)
    return out


def _pack(o: Any, stored: dict[str, tuple[str, Row]]) -> Any:
    if isinstance(o, dict):
        d = {k: _pack(v, stored) for k, v in _listed(o).items()}
        i, t = o.get("id"), o.get("text")
        if isinstance(i, str) and i in stored:
            where, (full, ts) = stored[i]
            if isinstance(t, str) and t and full.startswith(t):
                del d["text"]
                d[TEXT_OF] = where
                if len(t) < len(full):
                    d[TEXT_CHARS] = len(t)
            if "timestamp" in d and d["timestamp"] is not None and d["timestamp"] == iso(ts):
                del d["timestamp"]
                d[TIME_OF] = where
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
    """Put the text (and timestamp) back into an expanded trace, read now from the sources and
    memories by id; an entry whose row is gone gets ``text: None`` (``timestamp: None``) and a
    ``gone`` note instead."""
    want: dict[str, set[str]] = {"source": set(), "memory": set()}

    def wanted(d: dict) -> None:
        if isinstance(d.get("id"), str):
            for mark in (TEXT_OF, TIME_OF):
                want.get(d.get(mark, ""), set()).add(d["id"])

    _walk(trace, wanted)
    found: dict[str, dict[Any, Row]] = {
        "source": sources(sorted(want["source"])) if want["source"] else {},
        "memory": memories(sorted(want["memory"])) if want["memory"] else {}}

    def put(d: dict) -> None:
        when = d.pop(TIME_OF, None)
        if when in found:
            row = found[when].get(d.get("id"))
            d["timestamp"] = iso(row[1]) if row else None
            if row is None:
                d["gone"] = GONE[when]
        where = d.pop(TEXT_OF, None)
        if where not in found:
            return
        n = d.pop(TEXT_CHARS, None)
        row = found[where].get(d.get("id"))
        text = row[0] if row else None
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
