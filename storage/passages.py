"""Passages: the search units of long messages, so that every part of one can be found.

all-MiniLM-L6-v2 reads the first 256 word pieces of a text (``[CLS]`` and ``[SEP]``
included) and ignores the rest, so the vector of a 6,000-character assistant reply describes its
first ~1,000 characters only. A message longer than :data:`PASSAGE_CHARS` is therefore also
stored as overlapping passages in the namespace's ``passages`` table, each with its own vector
and full-text entry, linked to its source by ``source_id`` and character offsets
(``text[start:end]``, Python string indices). A message that fits in one passage has no passage
rows: it is its own only passage, and searching it works exactly as before.

Why these sizes: measured with the model's own tokenizer, its WordPiece vocabulary gives
4.0-5.7 characters per piece on the long messages of real chats (4.4 on average), 3.4 on Python
source and 3.0 on markdown with tables (bench/README.md, "Long messages"). 254 pieces (256 less ``[CLS]`` and
``[SEP]``) thus hold ~750 characters of the densest text, so a passage of at most 700 characters
plus its speaker prefix is not truncated; on prose it is ~160 pieces, short enough for one
vector to stay specific. Consecutive passages overlap by 175 characters (a quarter, cut at a
sentence or line boundary where there is one), so a fact of a sentence or two that straddles a
cut stands whole in one passage; and text denser still (a markdown table of backticked names,
2.2 characters a piece) loses at most the last ~140 characters of a passage to truncation,
which are the first of the next one, so every part of a message is read in some passage. A
message of up to 700 characters is its own only passage:
that is every LoCoMo turn and all but ~20 of the REALTALK development chats' messages.

A source's search score is its best passage's: :meth:`Passages.merge_hits` takes the max
over the message's own entry and its passages (cosines of one model are comparable across the two
tables; BM25 scores come from two indexes with their own statistics, so the max only ever lifts a
long message above what its whole text scored). The best passage's offsets are kept per source
(:meth:`span_of`) and attached to the rows ``Sources.get`` returns (``row["span"]``), which is
what ``strategies/render.py`` quotes the excerpt around.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict

import numpy as np

from .core import SpaceCore
from .db import ensure_index, retrying, sql_in
from .ranking import fts_config, ranked, search_text

log = logging.getLogger(__name__)

PASSAGE_CHARS = 700   # longest passage (characters): within 256 word pieces even for markdown
OVERLAP = 175         # characters shared by consecutive passages
VERSION = f"1:{PASSAGE_CHARS}:{OVERLAP}"   # stored per table: other sizes rebuild the passages
SPAN_MEMORY = 20_000  # sources whose best passage is remembered (most recent first)
SPAN_WINDOW = 8       # searches over which a better-ranked passage of a source is kept
_BREAKS = [re.compile(p) for p in (r"\n\s*\n", r"\n", r"[.!?;:](?=\s)", r"\s")]
_STARTS = [re.compile(r"\n|[.!?;:](?=\s)"), re.compile(r"\s")]   # the earliest line or sentence


def passage_spans(text: str, size: int = PASSAGE_CHARS, overlap: int = OVERLAP) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the passages of ``text``; ``[(0, len)]`` when it fits in one.

    A passage ends at the last paragraph break, else line break, else sentence end, else space
    in the second half of its window (a hard cut only in a text without any); the next one
    starts ``overlap`` characters earlier, moved forward to a line or sentence start (within
    half the overlap, else to a word start)."""
    n = len(text)
    if n <= size:
        return [(0, n)]
    out, start = [], 0
    while n - start > size:
        end = _last_break(text, start + size // 2, start + size)
        out.append((start, end))
        start = max(_next_start(text, end - overlap, end - overlap // 2, end), start + 1)
    out.append((start, n))
    return out


def _last_break(text: str, lo: int, hi: int) -> int:
    for pattern in _BREAKS:
        cut = None
        for m in pattern.finditer(text, lo, hi):
            cut = m.end()
        if cut is not None and cut > lo:
            return cut
    return hi


def _next_start(text: str, lo: int, mid: int, hi: int) -> int:
    """The first line or sentence start in ``lo..mid``, else the first word start in ``lo..hi``."""
    for pattern, stop in zip(_STARTS, (mid, hi)):
        m = pattern.search(text, lo, stop)
        if m is not None:
            pos = m.end()
            while pos < hi and text[pos].isspace():
                pos += 1
            if pos < hi:
                return pos
    return lo


class Passages:
    """The namespace's ``passages`` table (``Space.passages``) and the best passage of each
    long source the latest searches found."""

    def __init__(self, core: SpaceCore):
        self.core = core
        self._fts_ready = False
        self._missing_at = float("-inf")
        self._spans: OrderedDict[str, tuple[int, int, int, int]] = OrderedDict()
        self._span_lock = threading.Lock()
        self._search_seq = 0

    # -- the table -----------------------------------------------------------------------------
    def table(self, create: bool = False, fresh: bool = False):
        """The table, or None while it does not exist (looked for at most once a second, or
        now with ``fresh``: deletes must never miss a table another process just created)."""
        if not (create or fresh) and time.monotonic() - self._missing_at < 1.0:
            return None
        tbl = self.core.table("passages", create=create)
        if tbl is None:
            self._missing_at = time.monotonic()
            return None
        if not self._fts_ready:   # also a table re-embedded for a new model
            with self.core.store.index_lock(self.core.namespace):
                if not tbl.list_indices():
                    from lancedb.index import BTree  # lazy: circular before lancedb loads

                    for column, config in (("search_text", fts_config()), ("source_id", BTree())):
                        ensure_index(tbl, column, config)
                self._fts_ready = True
        return tbl

    def rows_of(self, sources: list[dict]) -> list[dict]:
        """Passage rows (embedded) for those of ``sources`` longer than one passage."""
        out = []
        for r in sources:
            spans = passage_spans(r["text"])
            if len(spans) < 2:
                continue
            for k, (start, end) in enumerate(spans):
                out.append({"id": f"{r['id']}#p{k}", "namespace": self.core.namespace,
                            "source_id": r["id"], "session_id": r["session_id"],
                            "speaker": r.get("speaker"), "timestamp": r["timestamp"],
                            "start": start, "end": end, "embed_model": self.core.model,
                            "search_text": search_text(dict(r, text=r["text"][start:end]))})
        if out:
            embed = self.core.embed
            if embed is None:
                raise RuntimeError("bind_model() must be called before storing long messages")
            for i in range(0, len(out), 64):
                batch = out[i:i + 64]
                vecs = embed([p["search_text"] for p in batch])
                for p, v in zip(batch, vecs):
                    p["vector"] = np.asarray(v, dtype=np.float32).tolist()
        return out

    def add(self, sources: list[dict], rows: list[dict] | None = None) -> int:
        """Store the passages of the long ones among ``sources`` (idempotent: ids are the
        source's id and the passage's number, so a retried write replaces, never doubles).
        ``rows``: their :meth:`rows_of`, embedded beforehand (outside a lock)."""
        rows = self.rows_of(sources) if rows is None else rows
        if rows:
            tbl = self.table(create=True)
            assert tbl is not None   # create=True opens or makes the table
            with self.core.writing():
                self.core.rewrote(tbl)
                retrying(lambda: tbl.merge_insert("id").when_matched_update_all()
                         .when_not_matched_insert_all().execute(rows), "add passages", table=tbl)
            self._missing_at = float("-inf")
            self.core.after_write("passages", len(rows))
        return len(rows)

    def delete(self, source_ids: list[str]) -> None:
        tbl = self.table(fresh=True)
        if tbl is not None and source_ids:
            for i in range(0, len(source_ids), 500):
                chunk = source_ids[i:i + 500]
                with self.core.writing():
                    self.core.rewrote(tbl)
                    retrying(lambda c=chunk: tbl.delete(sql_in("source_id", c)), "delete passages", table=tbl)
        with self._span_lock:
            for s in source_ids:
                self._spans.pop(s, None)

    def rebuild_index(self) -> None:
        tbl = self.table(fresh=True)
        if tbl is not None:
            with self.core.writing():
                retrying(lambda: tbl.create_index("search_text", config=fts_config(), replace=True),
                         "passages fts rebuild", table=tbl)

    def backfill(self) -> int:
        """Give a store written before passages existed (or with other passage sizes) its
        passages: run once per table and process, from ``Space.bind_model``; the version done is
        recorded in ``_meta``, so later opens cost one lookup. Returns the passages written."""
        key = f"passages:{self.core.name('sources')}"
        if self.core.store.get_meta(key) == VERSION:
            return 0
        src = self.core.table("sources")
        written = 0
        if src is not None:
            ptbl = self.table()
            if ptbl is not None and self.core.store.get_meta(key) is not None:  # other sizes: redo
                self.core.store.drop_table(ptbl.name)
                ptbl = None
            have = set() if ptbl is None else {
                r["source_id"] for r in ptbl.search().select(["source_id"]).limit(None).to_list()}
            rows = (src.search().where(f"character_length(text) > {PASSAGE_CHARS}")
                    .select(["id", "namespace", "session_id", "speaker", "timestamp", "text"])
                    .limit(None).to_list())
            todo = [r for r in rows if r["namespace"] == self.core.namespace and r["id"] not in have]
            for i in range(0, len(todo), 64):
                written += self.add(todo[i:i + 64])
            if written:
                log.info("indexed %d passages of %d long messages in namespace %r", written,
                         len(todo), self.core.namespace)
        self.core.store.set_meta(key, VERSION)
        return written

    # -- search ------------------------------------------------------------------------------------
    def merge_hits(self, base: list[tuple[str, float]], limit: int, search) -> list[tuple[str, float]]:
        """``base`` (the sources table's (id, score) best first) with each long source scored
        by its best entry: its own or one of its passages'. ``search(tbl, where_extra, k)`` runs the
        same search on the passages table ``tbl`` and returns rows with ``source_id, start, end,
        score``. Without passages this returns ``base`` unchanged."""
        tbl = self.table()
        if tbl is None:
            return base
        best: dict[str, tuple[float, int, int]] = {}
        for r in search(tbl, None, 2 * limit):
            if r["namespace"] == self.core.namespace and r["source_id"] not in best:
                best[r["source_id"]] = (r["score"], r["start"], r["end"])
        if not best:
            return base
        # long messages found by their own entry only: which of their passages matches best
        lacking = [i for i, _ in base if i not in best]
        if lacking:
            found: dict[str, tuple[float, int, int]] = {}
            for r in search(tbl, sql_in("source_id", lacking), 4 * len(lacking)):
                if r["namespace"] == self.core.namespace and r["source_id"] not in found:
                    found[r["source_id"]] = (r["score"], r["start"], r["end"])
            best.update(found)
        scores = dict(base)
        for sid, (score, _, _) in best.items():
            scores[sid] = max(scores.get(sid, float("-inf")), score)
        order = ranked(list(scores.items()), limit)
        with self._span_lock:
            self._search_seq += 1
            seq = self._search_seq
            for rank, (sid, _) in enumerate(order):
                if sid in best:
                    self._note_span(sid, best[sid][1], best[sid][2], rank, seq)
        return order

    def _note_span(self, sid: str, start: int, end: int, rank: int, seq: int) -> None:
        """Keep the best-ranked passage of ``sid`` among the last :data:`SPAN_WINDOW` searches
        (a recall runs its lexical and dense searches back to back), else the newest."""
        old = self._spans.get(sid)
        if old is None or old[3] < seq - SPAN_WINDOW or rank <= old[2]:
            self._spans[sid] = (start, end, rank, seq)
        self._spans.move_to_end(sid)
        while len(self._spans) > SPAN_MEMORY:
            self._spans.popitem(last=False)

    def span_of(self, source_id: str) -> tuple[int, int] | None:
        """Offsets of the passage of a long source that matched best in the latest searches
        that found it (None for a short source, or one no search found)."""
        with self._span_lock:
            got = self._spans.get(source_id)
        return None if got is None else (got[0], got[1])
