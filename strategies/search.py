"""The retrieval core: one turn search and one rank fusion, for every strategy and ``auto``.

* :func:`rrf` is the only reciprocal rank fusion (Cormack et al., 2009): score(d) = sum over
  the ranked lists r of w_r / (k + rank_r(d)). Each caller keeps its own k (plain, hybrid 60;
  wiki 20, sharper, so a strong hit keeps its lead over smoothed neighbours; auto's k is fitted).
  The order is deterministic: score descending, then first appearance (the earlier list, then
  the better rank in it), so the same ranked lists always give the same fused order.
* :class:`TurnSearch` is one recall's turn search: BM25 (the full-text index) and dense search
  over the namespace's source turns for the query, run at most once each, at the deepest depth
  anyone in the recall asks for, plus the source rows read so far. A strategy builds its own;
  ``auto`` builds one for all its voters and passes it to them in ``Env.turns``.
* :func:`search_turns` is the one search over turns: BM25 + dense, fused; for a query that
  names speakers, the name-free variant (``workspace/roles.py`` found it): sources are indexed
  and embedded as "speaker: text", so a speaker's name in the query matches every turn that
  speaker said and BM25 ranks their shortest turns first. When the query names speakers found
  among its dense hits, BM25 gets the query without those names and a third list ranks by the
  embedding of the name-free query (weight ``content_w``). When it names some but not all of
  the namespace's speakers (by label or by a name the conversation calls them,
  ``aliases.py``), a fourth list ranks the named speakers' own turns by that embedding (by the
  query's own when no name was stripped; weight ``speaker_w``): what is asked about a person
  is mostly in what that person said (on the LoCoMo dev conversations 94-97 % of the evidence
  turns of a question naming one speaker are that speaker's), and in a long chat those turns
  sit deep in the lists over everyone's turns.
  A query naming nobody, or every speaker, gets no such list.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import replace
from typing import Callable, Hashable, Iterable, TypeVar

import numpy as np

from ..storage import Source, SourceFilter
from .aliases import namespace_speakers, speaker_aliases
from .base import Env, RecallRequest
from .render import WHOLE_CHARS
from .render import source_ref  # noqa: F401  (re-exported: strategies cite sources through it)
from .speakers import named_speakers, without_speakers

RRF_K = 60
BEST_HITS = 100     # the searched turns whose own match counts as a hit (wiki's pool seeds)
SPEAKER_ROWS = 50   # the dense hits whose speakers count as "named" (default ``speaker_rows``)
SPEAKER_W = 1.0     # the named speakers' list weighs as the name-free one (chosen, not fitted)
T = TypeVar("T")


class Once:
    """Results computed at most once per key, shared by the threads of one recall: a second
    asker of a key being computed waits for that result instead of computing it again, and
    askers of other keys do not wait at all. A failure is not kept: the next ask tries again
    (the askers waiting on it get the error)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: dict[Hashable, Future] = {}

    def put(self, key: Hashable, value) -> None:
        fut: Future = Future()
        fut.set_result(value)
        with self._lock:
            self._done[key] = fut

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            fut = self._done.get(key)
            mine = fut is None
            if mine:
                fut = self._done[key] = Future()
        if mine:
            try:
                fut.set_result(compute())
            except BaseException as exc:
                with self._lock:
                    self._done.pop(key, None)
                fut.set_exception(exc)
        return fut.result()


def ahead(pool, fn: Callable[..., T], *args) -> Callable[[], T]:
    """Start ``fn(*args)`` in ``pool`` now; the returned callable gives its result. If no worker
    has picked the call up by then, it is taken back and run in the asking thread: a task of the
    pool that waits for it never waits on a queue it is itself holding up (several recalls share
    one namespace pool)."""
    fut = pool.submit(fn, *args)

    def result() -> T:
        return fn(*args) if fut.cancel() else fut.result()
    return result


def rrf(rankings: dict[str, list[str]], k: float = RRF_K,
        weights: dict[str, float] | None = None) -> dict[str, dict]:
    """Fuse ranked id lists: id -> {"score", "<list>_rank" for each list it is in}, best first
    (score desc, then first appearance). An id repeated within one list counts at its first
    rank. A list's weight defaults to 1.0."""
    parts: dict[str, dict] = {}
    for name, ids in rankings.items():
        w = (weights or {}).get(name, 1.0)
        for rank, i in enumerate(dict.fromkeys(ids), start=1):
            entry = parts.setdefault(i, {"score": 0.0})
            entry["score"] += w / (k + rank)
            entry[f"{name}_rank"] = rank
    order = sorted(parts, key=lambda i: -parts[i]["score"])   # stable: first appearance
    return {i: parts[i] for i in order}


def best_searched(parts: dict[str, dict], n: int = BEST_HITS) -> list[str]:
    """The ``n`` turns a fused search (``parts``, :func:`rrf`'s) ranked best."""
    return sorted(parts, key=lambda i: -parts[i].get("score", 0.0))[:n]


def unsearched_long(rows: Iterable[Source], parts: dict[str, dict]) -> set[str]:
    """The ids of ``rows`` too long to quote whole (``render.WHOLE_CHARS``) that the search
    (``parts``) did not rank among its :func:`best_searched`; nothing when there was no search.
    Such a message is quoted by the passage a search found in it; without one, all a context
    can show of it is its opening, which the query does not touch. Strategies that lift a turn
    by its neighbours' relevance (wiki's snapshot and trajectory, workspace's context
    inheritance) do not lift these: a long reply is not quoted for a neighbour's sake."""
    if not parts:
        return set()
    best = set(best_searched(parts))
    return {r.id for r in rows if len(r.text) > WHOLE_CHARS and r.id not in best}


def ranked_lists(parts: dict[str, dict], names: Iterable[str]) -> dict[str, list[str]]:
    """The ranked lists a fusion was made of, back from its parts (``<name>_rank``)."""
    out = {}
    for name in names:
        key = f"{name}_rank"
        out[name] = sorted((i for i in parts if key in parts[i]), key=lambda i: parts[i][key])
    return out


class TurnSearch:
    """One recall's BM25 and dense searches and its source-row reads, shared by its voters.

    ``lexical(n, query)`` / ``dense(n, vector)`` cut one search per query text / vector, run at
    ``depth`` on the first ask (default: the recall's query and its embedding). The voters of
    ``auto`` ask the same few: the query as asked and its name-free form (``search_turns``), so
    each is searched once per recall, not once per voter. BM25 ranks are exact under the cut;
    dense search is a flat scan below the vector index threshold (exact too) and an ANN search
    above it, where a deeper search only probes more. An ask deeper than ``depth`` searches on
    its own. ``rows(ids)`` reads each source row once per recall (rows are frozen: the callers
    share them; each long message with the best passage found so far). ``depth=0`` shares nothing.
    Safe to use from several threads (``auto``'s voters)."""

    def __init__(self, env: Env, request: RecallRequest, depth: int, qv=None):
        """``qv``: the query's vector (default: embedded now), or a :class:`Future` of it, so
        that searches that need no vector (BM25) can start while the query is embedded."""
        self.space = env.space
        self.query = request.query
        self.where = SourceFilter(since=request.since, until=request.until)
        self._qv = qv if isinstance(qv, Future) else np.asarray(
            env.embed_query(request.query) if qv is None else qv)
        self.depth = depth
        self._searches = Once()   # ("fts", text) / ("vector", bytes) -> the depth-cut hits
        self._rows: dict[str, Source] = {}
        self._lock = threading.Lock()
        self.hits = {"fts": 0, "vector": 0, "rows": 0}   # asks answered by the shared searches / rows read

    @property
    def qv(self) -> np.ndarray:
        """The query's vector (waits for it when it is still being embedded)."""
        if isinstance(self._qv, Future):
            self._qv = np.asarray(self._qv.result())
        return self._qv

    def lexical(self, n: int, query: str | None = None) -> list[tuple[str, float]]:
        text = self.query if query is None else query
        if n > self.depth:
            return self.space.sources.fts_search(text, n, self.where)
        lex = self._searches.get(("fts", text),
                                 lambda: self.space.sources.fts_search(text, self.depth, self.where))
        with self._lock:
            self.hits["fts"] += 1
        return lex[:n]

    def dense(self, n: int, vector=None, speakers: frozenset[str] | None = None
              ) -> list[tuple[str, float]]:
        """Dense hits for ``vector`` (default: the query's), among the turns of ``speakers``
        when given."""
        v = self.qv if vector is None else np.asarray(vector)
        where = self.where if speakers is None else replace(self.where, speakers=speakers)
        if n > self.depth:
            return self.space.sources.vector_search(v, n, where)
        key = ("vector", v.dtype.str.encode() + v.tobytes(), speakers)
        dense = self._searches.get(key, lambda: self.space.sources.vector_search(v, self.depth, where))
        with self._lock:
            self.hits["vector"] += 1
        return dense[:n]

    def rows(self, ids: list[str]) -> list[Source]:
        """Source rows for ``ids`` in the order asked; only the ones not read yet are fetched."""
        with self._lock:
            missing = [i for i in dict.fromkeys(ids) if i not in self._rows]
        fetched = self.space.sources.get(missing) if missing else []
        with self._lock:
            for r in fetched:
                self._rows[r.id] = r
            self.hits["rows"] += len(ids) - len(missing)
            out = [self._rows[i] for i in ids if i in self._rows]
        # a long message's quoted passage is the best one of the searches run so far, which
        # may be later than this row's first read (dense, then BM25: ``search_turns``)
        return self.space.sources.with_spans(out)


def turn_search(env: Env, request: RecallRequest, depth: int, qv=None) -> TurnSearch:
    """The recall's shared search when ``auto`` passed one (``Env.turns``), else a new one."""
    return env.turns if env.turns is not None else TurnSearch(env, request, depth, qv)


def search_turns(env: Env, request: RecallRequest, n: int, *, names: bool = True,
                 content_w: float = 1.0, k: float = RRF_K, dense_w: float = 1.0,
                 speaker_w: float = SPEAKER_W,
                 speaker_rows: Callable[[list[str]], list[Source]] | None = None,
                 turns: TurnSearch | None = None) -> tuple[list[str], dict[str, dict]]:
    """Fused candidate turn ids (best first) and each one's score parts (``score``,
    ``bm25_rank``, ``dense_rank``, ``content_rank``, ``speaker_rank``, raw ``bm25`` and
    ``cosine``).

    ``names``: search a query that names speakers without their names, and among the named
    speakers' own turns (module docstring); ``speaker_rows(dense ids)`` gives the rows whose
    speakers count for the name-free query (default: the top ``SPEAKER_ROWS`` dense hits).
    ``dense_w``, ``content_w``, ``speaker_w``: the weights of the query's dense list, the
    name-free one and the named speakers' one."""
    turns = turns or turn_search(env, request, n)
    dense = turns.dense(n)
    query, named = request.query, set()
    if names:
        ids = [i for i, _ in dense]
        rows = speaker_rows(ids) if speaker_rows else turns.rows(ids[:SPEAKER_ROWS])
        aliases = speaker_aliases(env.ns, env.space)
        query = without_speakers(query, {r.speaker for r in rows if r.speaker}, aliases)
        if speaker_w > 0:
            named = named_speakers(request.query, namespace_speakers(env.ns, env.space), aliases)
    lexical = turns.lexical(n, query)
    lists = {"bm25": [i for i, _ in lexical], "dense": [i for i, _ in dense]}
    cv = env.embed_query(query) if query != request.query and (content_w > 0 or named) else None
    if names and content_w > 0 and cv is not None:
        lists["content"] = [i for i, _ in turns.dense(n, cv)]
    if named:
        lists["speaker"] = [i for i, _ in turns.dense(n, cv, frozenset(named))]
    parts = rrf(lists, k=k, weights={"dense": dense_w, "content": content_w,
                                     "speaker": speaker_w})
    for i, x in lexical:
        parts[i]["bm25"] = x
    for i, x in dense:
        parts[i]["cosine"] = x
    return list(parts), parts


