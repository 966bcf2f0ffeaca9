"""When ``auto`` abstains: the best evidence is about something else than the query.

Two signals, each read off the namespace itself rather than fixed to a benchmark:

* closeness: the dense cosine ``s`` between the query and its best-matching turn (within the
  recall's time window), against the cosines between pairs of the namespace's own turns, drawn at
  random (``SAMPLE`` turns): their mean ``mu`` and spread ``sd``. Two turns of one memory share
  speakers, people and topics, so ``mu`` is what mere membership in this memory is worth, and
  ``z = (s - mu) / sd`` says how much closer than that the best turn is;
* wording: the share of the query's content words that occur in the best evidence (the top
  ``TOP`` turns of the dense search and of BM25).

The recall abstains when ``z < Z_CLOSE`` (the best turn is less than one spread above a typical
pair) and at most ``COVER`` (half) of the query's content words occur in that evidence: neither
the meaning nor the words of the question are in memory. Both are round values, chosen on the
dev conversations (bench/README.md, "Abstain": the off-topic questions of bench/offtopic.txt and the
benchmarks' answerable ones, so in-sample there); a model whose cosines run higher or lower moves
``mu`` and ``sd`` with it. Below ``MIN_TURNS`` turns there are too few pairs to say what is
typical, and the recall abstains only when it found nothing. The calibration is kept in the
namespace's context (``Env.ns``) and redone when the namespace has grown or shrunk by a quarter
(``REFIT``).

An embedder that embeds a query differently from a document (``Env.asymmetric``: e5's
``query: `` and ``passage: ``) breaks the premise that a pair of turns is what a query's cosine
should be read against: two passages share their prefix, and their cosines run above any
query's (on a LoCoMo dev conversation with e5, the mean pair cosine of turns was 0.858 and the
answerable questions' best cosine 0.866: nine questions in ten fell below one spread). For such
a model the pairs are query to passage: ``QUERY_SAMPLE`` of the sampled turns are embedded as
queries (their search text, as stored) and compared with the other sampled turns. That costs
those query embeddings each time the calibration is redone.

The flag never changes the context: the evidence is still returned, ranked as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ...storage.sources import search_text_of
from ..hybrid.heuristics import content_words

if TYPE_CHECKING:
    from ..search import TurnSearch
    from ..space_api import StrategySpace

SAMPLE = 256
QUERY_SAMPLE = 16   # asymmetric embedders: turns embedded as queries (x 255 pairs each)
MIN_TURNS = 8
REFIT = 0.25
TOP = 5
Z_CLOSE = 1.0
COVER = 0.5

CAL_KEY = "auto.calibration"


def calibration(ns, space: StrategySpace, embed_queries: Callable[[list[str]], Any] | None = None
                ) -> dict | None:
    """``{"turns", "mu", "sd", "pairs"}`` of the namespace's pairwise turn cosines, or None (too
    few); ``ns``: the namespace's context, where the last calibration is kept. With
    ``embed_queries`` (an asymmetric embedder's) the pairs are query to passage."""
    n = space.sources.count()
    cal = ns.get(CAL_KEY)
    if cal is not None and abs(n - cal["turns"]) <= REFIT * cal["turns"]:
        return cal if cal["sd"] > 0 else None
    if n < MIN_TURNS:
        return None
    if embed_queries is None:
        v = _unit(space.sources.sample_vectors(SAMPLE))
        pairs, kind = (v @ v.T)[np.triu_indices(len(v), 1)], "passage-passage"
    else:
        pairs, kind = _query_pairs(space, embed_queries), "query-passage"
    if pairs.size == 0:
        return None
    cal = {"turns": n, "mu": float(pairs.mean()), "sd": float(pairs.std()), "pairs": kind}
    ns.put(CAL_KEY, cal)
    return cal if cal["sd"] > 0 else None


def _unit(v: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(norms > 0, norms, 1.0)


def _query_pairs(space: StrategySpace, embed_queries: Callable[[list[str]], Any]) -> np.ndarray:
    """Cosines of the first ``QUERY_SAMPLE`` sampled turns, embedded as queries, to every other
    sampled turn's stored (passage) vector."""
    ids = space.sources.sample_ids(SAMPLE)
    vecs = space.sources.vectors(ids)
    ids = [i for i in ids if i in vecs]
    rows = space.sources.get(ids[:QUERY_SAMPLE])
    if len(ids) < 2 or not rows:
        return np.zeros(0)
    q = _unit(np.asarray(embed_queries([search_text_of(r.speaker, r.text) for r in rows]), dtype=np.float64))
    p = _unit(np.asarray([vecs[i] for i in ids], dtype=np.float64))
    col = {i: c for c, i in enumerate(ids)}
    sims = q @ p.T
    keep = np.ones(sims.shape, dtype=bool)
    keep[np.arange(len(rows)), [col[r.id] for r in rows]] = False   # not a turn with itself
    return sims[keep]


def evidence(turns: TurnSearch) -> tuple[float | None, list[str]]:
    """The best turn's cosine and the texts of the top turns of both searches of the recall's
    ``search.TurnSearch`` (in a fusion, the searches the voters already ran)."""
    dense = turns.dense(TOP)
    lexical = turns.lexical(TOP)
    ids = list(dict.fromkeys([i for i, _ in dense] + [i for i, _ in lexical]))
    return (dense[0][1] if dense else None), [r.text for r in turns.rows(ids)]


def coverage(query: str, texts: list[str]) -> float:
    """Share of the query's content words found among the words of ``texts`` (1.0 when the
    query has none)."""
    words = set(content_words(query))
    if not words:
        return 1.0
    seen = set(content_words(" ".join(texts)))
    return len(words & seen) / len(words)


def judge(ns, space: StrategySpace, best_cosine: float | None, cover: float = 0.0,
          embed_queries: Callable[[list[str]], Any] | None = None) -> dict:
    """Whether the evidence is off the query: ``{"abstain", "why", ...}`` for trace and reason.
    ``embed_queries``: given for an asymmetric embedder (:func:`calibration`)."""
    if best_cosine is None:
        return {"abstain": True, "why": "no turn matched"}
    cal = calibration(ns, space, embed_queries)
    if cal is None:
        return {"abstain": False, "best_cosine": round(best_cosine, 4),
                "why": f"fewer than {MIN_TURNS} turns: nothing to calibrate against"}
    z = (best_cosine - cal["mu"]) / cal["sd"]
    off = z < Z_CLOSE and cover <= COVER
    out = {"abstain": off, "best_cosine": round(best_cosine, 4),
           "namespace_mean": round(cal["mu"], 4), "namespace_sd": round(cal["sd"], 4),
           "z": round(z, 3), "query_words_covered": round(cover, 3),
           "sample_turns": min(SAMPLE, cal["turns"]), "pairs": cal.get("pairs", "passage-passage"),
           "rule": f"z < {Z_CLOSE:g} and covered <= {COVER:g}"}
    typical = ("between two turns" if cal.get("pairs", "passage-passage") == "passage-passage"
               else "of a turn, as a query, to another turn")
    out["why"] = (f"the best turn's cosine to the query ({best_cosine:.2f}) is {z:.1f} sd from "
                  f"the mean cosine {typical} of this namespace ({cal['mu']:.2f}), and "
                  f"{100 * cover:.0f}% of the query's words occur in the best evidence")
    return out
