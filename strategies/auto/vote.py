"""The vote: every voter of ``auto`` ranks source turns for the same query, side by side.

The voters share one query embedding (with the query's likely name-free form in the same batch)
and one turn search (``search.TurnSearch``), whose BM25 searches start while the query is
embedded. ``auto`` fuses what ``vote`` returns (``strategy.py``); ``bench/fit_auto.py``
harvests the same rankings through it.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from dataclasses import replace

from ..aliases import namespace_speakers, speaker_aliases
from ..base import Env, RecallRequest, Recollection
from ..options import RecallOptions
from ..search import Once, TurnSearch
from ..speakers import without_speakers
from .relevance import TOP
from ..registry import get

DEPTH = 200   # the deepest turn search among the voters (wiki's ``n_turns``), run once for all
log = logging.getLogger(__name__)


def vote(env: Env, request: RecallRequest, voters: list[str], expand: float,
         depth: int = DEPTH) -> tuple[dict[str, Recollection], dict[str, str], dict[str, float],
                                      TurnSearch]:
    """Every voter's recall for ``expand`` x the budget, sharing one query embedding and one
    turn search (run once at ``depth``, the deepest any voter asks for; ``0`` = each its own).
    Returns (recollections, failures, milliseconds per voter, the shared search). ``auto`` fuses
    what this returns; ``bench/fit_auto.py`` harvests the same rankings through it."""
    # current_first 0: auto orders changed facts once, on the fused ranking (``recall``)
    sub = RecallRequest(query=request.query,
                        budget_tokens=max(1, int(request.budget_tokens * expand)),
                        since=request.since, until=request.until,
                        options=RecallOptions.parse({"current_first": 0}),
                        ranking_only=True, quote_budget=request.budget_tokens)
    guess = _name_free_guess(env, request.query)
    qv: Future = Future()
    turns = TurnSearch(env, sub, depth, qv)
    # the BM25 searches need no vector: they start now, in native code, while the query is
    # embedded; the query as asked (relevance.evidence reads it after the vote) and its likely
    # name-free form (what the voters' search_turns search), at the depth the voters cut from
    pool = env.ns.pool()
    pool.submit(turns.lexical, TOP)
    if guess is not None:
        pool.submit(turns.lexical, depth, guess)
    try:
        vec, embed = _embedded(env, request.query, guess)   # once, not once per voter
    except BaseException as exc:
        qv.set_exception(exc)
        raise
    qv.set_result(vec)
    shared = replace(env, turns=turns, embed_query=embed)
    runs, failed, ms = _run_voters(shared, sub, voters)
    return runs, failed, ms, turns


def _embedded(env: Env, query: str, guess: str | None):
    """The query's vector, and ``embed`` remembered for this recall: the voters embed the same
    variants of the query (its name-free form, ``search.search_turns``) and each would run the
    model again; side by side, the second asker waits for the first's result (``search.Once``).
    The likely name-free form is embedded with the query in one batch (the local model: 13.7
    against 18.2 ms for the two one after the other, p50 over 146 development questions, same
    vectors to the bit), instead of after the dense search that tells which names to strip; a
    wrong guess costs that one batch row and the right form is embedded when asked for."""
    texts = [query] if guess is None else [query, guess]
    vecs = env.embed_queries(texts)
    once = Once()
    for text, v in zip(texts, vecs):
        once.put(text, v)
    return vecs[0], lambda text: once.get(text, lambda: env.embed_query(text))


def _name_free_guess(env: Env, query: str) -> str | None:
    """The query without the namespace's speakers' names (labels and learned aliases), as
    ``search_turns`` strips them, or None when that leaves it as it is. It strips the names of
    the speakers among the query's 50 best dense hits, so the guess is exact whenever all the
    named speakers are among them (in a two-person chat, nearly always)."""
    aliases = speaker_aliases(env.ns, env.space)
    out = without_speakers(query, set(namespace_speakers(env.ns, env.space)), aliases)
    return out if out != query else None


def _run_voters(env: Env, sub: RecallRequest, voters: list[str]):
    """Each voter's recall, side by side; a voter that fails is logged and left out (the others
    still answer), with its error kept for the trace."""
    # side by side: most of their time is LanceDB searches and numpy, which release the GIL
    pool = env.ns.pool()
    futures = {s: pool.submit(_timed, get(s).recall, env, sub) for s in voters}
    runs, failed, ms = {}, {}, {}
    for s, fut in futures.items():
        try:
            runs[s], ms[s] = fut.result()
        except Exception as exc:  # noqa: BLE001 - one strategy must not sink the recall
            log.warning("auto: %s failed and was left out: %s", s, exc)
            failed[s] = f"{type(exc).__name__}: {exc}"[:300]
    return runs, failed, ms


def _timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, round(1000 * (time.perf_counter() - t0), 1)
