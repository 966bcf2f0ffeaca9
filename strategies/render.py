"""Packing raw sources into a token budget and rendering them compactly.

Every strategy ends here when it shows raw evidence. The layout spends the budget on evidence:
turns are grouped under one header per session (its date), instead of repeating a timestamp on
every line, and within a session they keep their original order so the answering model reads a
coherent excerpt. The whole block sits inside ``<memory>`` delimiters with a one-line notice that
it is quoted data, not instructions. Every stored string goes through ``frame`` (content with
``shown``, speakers with ``speaker``, session ids with ``one_line``): nothing it holds can end or
open the frame or start a line of its own. A source counts as *verbatim* (and is listed among the
``sources``) when its text stands in the context exactly, except that each line break in it is
followed by ``frame.INDENT``; one that needed a tag neutralised is quoted but not listed.

A message longer than :data:`WHOLE_CHARS` (an IDE assistant's multi-page answer) is quoted as
one verbatim excerpt of at most :data:`EXCERPT_CHARS`: the passage of it that the search matched
best (``Source.span``, see ``storage/passages.py``; its opening passage when no search found
one), widened evenly to word boundaries, with ``…`` outside the quote where text was left out.
:func:`source_ref` cites exactly that excerpt with its offsets (``start``/``end`` into the
message's text), so ``sources`` stays honest: every cited text stands verbatim in the context.
Why these sizes: 1,600 characters is 400 tokens, a fifth of the default budget, and no message of
the development chats is longer, so they are quoted whole as before; a 1,200-character excerpt
holds the matched passage (at most 700) and about a paragraph of its surroundings. Under a small
budget an excerpt is narrower: at most a quarter of the budget's characters
(:func:`quote_width`: 1,000 characters at 1,000 tokens, 500 at 500), so one long reply cannot
take a third of what the host reads, and a shorter quote fits beside the turns ranked above
it. Below the passage's own length (budgets under 700 tokens) the quote is centred on the
passage's sentence that holds the most of the question's content words (:func:`focused`; a
passage the question shares no word with keeps its beginning). An excerpt more than half of
whose word 4-grams the context already quotes, and whose remainder holds none of the question's
content words, is left out (:class:`Quoted`): an assistant's write-ups repeat their boilerplate
with other names and figures, and over memory the hooks captured six near-copies of one
paragraph were quoted in a row, ahead of the turns that held the answer. Measured on
``bench/longmsg.py`` (facts at 10-90 % of 3,000- and 7,000-character replies; with the narrower
quote, auto's voters pricing it at the caller's width and the centred quote, auto's fact found
at 500 tokens 0.58 -> 0.95, at 1,000 0.88 -> 0.95; plain 0.55 -> 0.83 and 0.83 -> 0.93).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from ..storage.passages import PASSAGE_CHARS
from ..storage.rows import Source
from .base import SourceRef
from .frame import CLOSE, OPEN, one_line, shown, speaker
from .hybrid.heuristics import content_words

__all__ = ["CLOSE", "OPEN", "Packed", "excerpt", "pack_sources", "quote_width", "render",
           "render_line", "session_header", "source_ref"]

WHOLE_CHARS = 1600    # a message up to this long is quoted whole
EXCERPT_CHARS = 1200  # the quote of a longer one: its matched passage and what surrounds it
ELLIPSIS = "…"
SNAP = 200            # how far an excerpt's edge may move to begin or end at a line
QUOTE_SHARE = 4       # an excerpt takes at most 1/QUOTE_SHARE of the budget's characters


def quote_width(budget_tokens: int) -> int:
    """The widest excerpt of a long message in a context of ``budget_tokens`` tokens
    (``4 * budget_tokens`` characters): :data:`EXCERPT_CHARS`, or a quarter of the budget when
    that is less."""
    return max(1, min(EXCERPT_CHARS, 4 * budget_tokens // QUOTE_SHARE))


REPEAT_SHARE = 2      # an excerpt more than 1/REPEAT_SHARE of whose word 4-grams are quoted
_WORD = re.compile(r"[^\W\d_]+|\d+")


def shingles(text: str, n: int = 4) -> set[tuple[str, ...]]:
    """The word ``n``-grams of ``text`` (case folded, every number the same word): what tells
    an excerpt that repeats text already quoted (an assistant's boilerplate, a template it
    fills with other names and figures) from one that adds to it."""
    words = ["0" if w.isdigit() else w.casefold() for w in _WORD.findall(text)]
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


class Quoted:
    """The word 4-grams of the lines a context quotes (:func:`shingles`), made only when an
    excerpt of a long message is to be checked against them: a context without one (every
    context of the development chats) pays nothing for the check."""

    def __init__(self, query: str | None):
        self.asked = {w.split("'")[0] for w in content_words(query or "")}
        self.grams: set[tuple[str, ...]] = set()
        self.lines: list[str] = []   # quoted, not yet in ``grams``

    def repeats(self, line: str) -> bool:
        """Whether ``line`` (an excerpt's) mostly repeats what is quoted: more than half of its
        4-grams are, and what it adds holds none of the question's content words (an answer
        written into the same boilerplate still adds those)."""
        for quoted in self.lines:
            self.grams |= shingles(quoted)
        self.lines = []
        grams = shingles(line)
        if not grams or len(grams & self.grams) * REPEAT_SHARE <= len(grams):
            return False
        return not self.asked.intersection(w for g in grams - self.grams for w in g)


_STARTS = re.compile(r"(?<=[.!?;:])\s+|\n+")   # where a sentence or a line begins after


def focused(rows: list[Source], query: str, width: int) -> list[Source]:
    """``rows`` with each long message's ``span`` narrowed to ``width`` characters when its
    matched passage is wider (see the module docstring): the window of the passage centred on
    its sentence (or line) holding the most distinct content words of ``query``, the earliest
    on a tie; the passage's beginning when no sentence holds one. A narrowed row is a copy."""
    words = set(content_words(query))
    out = []
    for r in rows:
        span = r.span
        if words and span and len(r.text) > WHOLE_CHARS and span[1] - span[0] > width:
            r = r.with_span(_best_window(r.text, (int(span[0]), int(span[1])), width, words))
        out.append(r)
    return out


def _best_window(text: str, span: tuple[int, int], width: int, words: set[str]) -> tuple[int, int]:
    start, end = span
    cuts = [start] + [m.end() for m in _STARTS.finditer(text, start, end) if m.end() < end] + [end]
    best, best_n = (start, start), 0
    for a, b in zip(cuts, cuts[1:]):
        n = len(words.intersection(content_words(text[a:b])))
        if n > best_n:
            best, best_n = (a, b), n
    if best_n == 0:
        return start, start + width
    a, b = best   # the sentence with the most of the query's words, centred in the window
    lo = min(max(start, a - max(0, width - (b - a)) // 2), end - width)
    return lo, lo + width


@lru_cache(maxsize=4096)   # packing asks for each candidate's header, hundreds per recall
def session_header(ts: datetime | None, session_id: str) -> str:
    if ts is None:
        return f"[session {one_line(session_id)}]\n"
    return f"[{ts.strftime('%Y-%m-%d')} ({ts.strftime('%a')})]\n"


def excerpt(row: Source, width: int = EXCERPT_CHARS) -> tuple[str, int | None, int | None]:
    """What of a source is quoted: ``(text, None, None)`` for a message of up to
    :data:`WHOLE_CHARS`, else ``(text[start:end], start, end)``, an excerpt of at most ``width``
    characters (:func:`quote_width`) around ``row.span`` (default: the opening passage)."""
    return _quoted(row.text, row.span, width)


def _quoted(text: str, span: tuple[int, int] | None,
            width: int) -> tuple[str, int | None, int | None]:
    if len(text) <= WHOLE_CHARS:
        return text, None, None
    start, end = span or (0, PASSAGE_CHARS)
    return _excerpt(text, (int(start), int(end)), width)


def _excerpt(text: str, span: tuple[int, int], width: int) -> tuple[str, int, int]:
    n = len(text)
    start, end = span
    start, end = max(0, min(start, n)), max(0, min(end, n))
    if end - start > width:
        end = start + width
    room = width - (end - start)
    a = max(0, start - room // 2)
    b = min(n, end + room - (start - a))
    a = max(0, min(a, b - width))
    if a > 0:   # begin at a line (else a word) start, never inside the passage
        line = text.find("\n", a - 1, min(start, a + SNAP))
        if line >= 0:
            a = line + 1
        elif not text[a - 1].isspace():
            cut = next((k for k in range(a, start) if text[k].isspace()), None)
            a = cut + 1 if cut is not None else a
        while a < start and text[a].isspace():
            a += 1
    if b < n:   # end at a line (else a word) end
        line = text.rfind("\n", max(end, b - SNAP), b + 1)
        if line >= 0:
            b = line
        elif not text[b].isspace():
            cut = next((k for k in range(b - 1, end - 1, -1) if text[k].isspace()), None)
            b = cut if cut is not None else b
        while b > end and text[b - 1].isspace():
            b -= 1
    return text[a:b], a, b


def source_ref(row: Source, width: int = EXCERPT_CHARS) -> SourceRef:
    """The citation of a quoted source: its text as it stands in the context (the excerpt, with
    its offsets, for a long message; ``width`` as it was rendered: ``Packed.width``)."""
    text, start, end = excerpt(row, width)
    return SourceRef(id=row.id, ref=row.ref, session_id=row.session_id, speaker=row.speaker,
                     timestamp=row.timestamp, text=text, start=start, end=end)


def render_line(row: Source, width: int = EXCERPT_CHARS) -> tuple[str, bool]:
    """The line for one source, and whether its text (its excerpt, for a long message) stands
    in it verbatim."""
    long = len(row.text) > WHOLE_CHARS
    span = row.span if long else None
    return _line(row.text, row.speaker, tuple(span) if span else None,
                 width if long else EXCERPT_CHARS)


@lru_cache(maxsize=8192)   # a recall measures hundreds of candidates' lines, the same from one
def _line(full: str, who: str | None, span: tuple[int, int] | None,
          width: int) -> tuple[str, bool]:
    quote, start, end = _quoted(full, span, width)
    text, verbatim = shown(quote)
    if start is not None and end is not None:   # both or neither
        text = (f"{ELLIPSIS} " if start > 0 else "") + text + (
            f" {ELLIPSIS}" if end < len(full) else "")
    return (f"{speaker(who)}: {text}\n" if who else f"- {text}\n"), verbatim


@dataclass
class Packed:
    context: str
    chosen: list[Source]                    # the source rows, in the order they were accepted
    left_out: list[tuple[Source, str]] = field(default_factory=list)
    verbatim_ids: set[str] = field(default_factory=set)
    chars_used: int = 0
    chars_budget: int = 0
    width: int = EXCERPT_CHARS              # of a long message's excerpt (``source_ref``)


def pack_sources(candidates: list[Source], budget_tokens: int, *, extra_chars: int = 0,
                 max_items: int | None = None, by_rank: bool = False,
                 marks: dict[str, str] | None = None, quote_tokens: int | None = None,
                 focus: str | None = None) -> Packed:
    """Greedily accept ``candidates`` (best first) while the rendered context fits the budget.

    A candidate too long for what is left is skipped, not the end: a shorter one after it may
    still fit. ``extra_chars`` reserves room for text a strategy renders around the sources.
    ``by_rank`` orders the
    session groups by their best candidate instead of by time (see :func:`render`). ``marks``:
    a line written by the strategy (never stored text) to quote under a source, counted in the
    budget (``wiki/revisions.py``: ``[changed later: DATE]``). ``quote_tokens``: the budget that
    sets long messages' quote width (``RecallRequest.quote_tokens``; default ``budget_tokens``).
    ``focus``: the query, which a quote narrower than its passage is focused on (:func:`focused`;
    the chosen rows carry the narrowed span, so ``source_ref`` cites what was quoted).
    """
    marks = marks or {}
    width = quote_width(quote_tokens or budget_tokens)
    if focus:
        candidates = focused(candidates, focus, width)
    limit = budget_tokens * 4 - extra_chars
    used = len(OPEN) + len(CLOSE)
    chosen: list[Source] = []
    left_out: list[tuple[Source, str]] = []
    seen: set[str] = set()
    headers: dict[str, int] = {}
    quoted = Quoted(focus)
    if used > limit:
        return Packed("", [], [(c, "budget smaller than the frame") for c in candidates],
                      chars_budget=max(limit, 0), width=width)
    for c in candidates:
        if c.id in seen:
            continue
        if max_items is not None and len(chosen) >= max_items:
            left_out.append((c, "item limit"))
            continue
        line, _ = render_line(c, width)
        if len(c.text) > WHOLE_CHARS and quoted.repeats(line):
            left_out.append((c, "repeats what is quoted"))
            continue
        cost = len(line) + len(marks.get(c.id, ""))
        sid = c.session_id
        if sid not in headers:
            cost += len(session_header(c.timestamp, sid))
        if used + cost > limit:
            left_out.append((c, "over budget"))
            continue
        used += cost
        headers.setdefault(sid, 1)
        quoted.lines.append(line)
        chosen.append(c)
        seen.add(c.id)
    context, verbatim = render(chosen, by_rank, marks, width)
    while chosen and len(context) > limit:  # only if headers differed from the estimate
        left_out.append((chosen.pop(), "over budget"))
        context, verbatim = render(chosen, by_rank, marks, width)
    if not chosen:
        context = ""
    return Packed(context, chosen, left_out, verbatim, len(context), limit, width)


def render(rows: list[Source], by_rank: bool = False, marks: dict[str, str] | None = None,
           width: int = EXCERPT_CHARS) -> tuple[str, set[str]]:
    """Rows grouped by session (turns by position) inside the frame. Sessions come in time
    order, or with ``by_rank`` in the order of their best row (``rows`` best first), so the most
    useful evidence opens the block: answering models read the start of a context best."""
    groups: dict[str, list[Source]] = {}
    for r in rows:
        groups.setdefault(r.session_id, []).append(r)

    def first_time(sid: str) -> Any:
        ts = [r.timestamp for r in groups[sid] if r.timestamp is not None]
        return (0, min(ts)) if ts else (1, sid)

    parts, verbatim = [OPEN], set()
    for sid in (list(groups) if by_rank else sorted(groups, key=first_time)):
        turns = sorted(groups[sid], key=lambda r: (r.seq or 0))
        parts.append(session_header(turns[0].timestamp, sid))
        for r in turns:
            line, ok = render_line(r, width)
            parts.append(line)
            if marks and r.id in marks:
                parts.append(marks[r.id])
            if ok:
                verbatim.add(r.id)
    parts.append(CLOSE)
    return "".join(parts), verbatim
