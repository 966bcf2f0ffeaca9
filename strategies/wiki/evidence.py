"""Provenance records, answerability and retry hints for the wiki recall.

The paper expands each selected trajectory into (claim, snapshot, source ref, timestamp) tuples.
Here the budget is spent on the raw source turns themselves (verbatim, through
``render.pack_sources``); which turns, in which order, is decided in ``scoring.py``. Every
packed turn is listed in the trace with its trajectory, snapshot, claims, ref and timestamp
(``provenance``); ``sources`` lists only what stands verbatim.

Answerability (the paper's z_q records it; without an LLM we judge it from the evidence): the
*support* of an attempt is ``best_b + cover``, where ``best_b`` is b(q,T) of the best selected
trajectory and ``cover`` the share of the query's content stems (names included) found in the
packed turns. Evidence is *sufficient* when support >= ``MIN_SUPPORT`` (1.30). Calibration: on
LoCoMo's answerable questions (categories 1-4) support is the observable that best tracks how
much gold evidence was packed (Pearson 0.21, against 0.19 for best_b and 0.17 for cover alone;
the best raw query-turn cosine does not track it at all, r ~ 0), and 1.30 is its 5th percentile
there: a first attempt below it finds clearly less (R 0.63 against 0.88). The old rule (best_b
>= 0.45 and cover >= 0.5) fired on 0.4% of questions: best_b is never that low there.
If the first attempt is insufficient, one controlled retry adds ``hints`` (the most frequent
names / noun heads of the top-3 selected trajectories that the query lacks) to the query, averages
the two query vectors and reroutes through 2t pages; the attempt with the higher support is kept,
and if that is still insufficient the recall abstains (its context is still returned). The retry
is judged on the original query's words: its hint words are always in the evidence they fetch,
so counting them would let any retry vouch for itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import store
from . import text as tx
from ...storage.rows import Source

if TYPE_CHECKING:
    from ..space_api import StrategySpace

MIN_SUPPORT = 1.30


def provenance(space: StrategySpace, packed_rows: list[Source], owner: dict[str, str],
               s_of: dict[str, str]) -> list[dict]:
    """The (trajectory, snapshot, claims, ref, timestamp) record of each packed turn (``s_of``:
    source id -> snapshot id, from ``turnmap.TurnMaps``)."""
    want = sorted({s_of[r.id] for r in packed_rows if r.id in s_of})
    snaps = store.snapshots(space, eq={"id": want}, columns=["id", "source_ids", "claims"]) if want else []
    by_snap = {s.id: s for s in snaps}
    by_src = {r.id: by_snap[s_of[r.id]] for r in packed_rows
              if s_of.get(r.id) in by_snap}
    out = []
    for r in packed_rows:
        s = by_src.get(r.id)
        claims = [c.id for c in s.claims if c.source_id == r.id] if s else []
        out.append({"source_id": r.id, "ref": r.ref, "timestamp": r.timestamp,
                    "trajectory": owner.get(r.id), "snapshot": s.id if s else None,
                    "claims": claims})
    return out


def sufficiency(query_f: dict, chosen: list[dict], rows: list[Source]) -> dict:
    q = set(query_f["tokens"]) | {tx.stem(n) for n in query_f["names"]}
    have = set()
    for r in rows:
        have |= set(tx.tokens(r.text)) | set(tx.tokens(r.speaker or ""))
    cover = len(q & have) / len(q) if q else 1.0
    best_b = max((c["parts"]["b"] for c in chosen), default=0.0)
    support = best_b + cover
    return {"sufficient": support >= MIN_SUPPORT, "support": round(support, 4),
            "best_b": round(best_b, 4), "query_term_cover": round(cover, 4),
            "missing_terms": sorted(q - have)}


def hints(query_f: dict, chosen: list[dict], suff: dict) -> list[str]:
    """Retrieval hints for the one controlled retry: the missing query terms' best companions,
    i.e. the most frequent names / heads of the top-3 trajectories that the query lacks."""
    counts: dict[str, int] = {}
    for c in chosen[:3]:
        for x in c["row"].names + c["row"].heads:
            if x.lower() not in query_f["ents"]:
                counts[x] = counts.get(x, 0) + 1
    return sorted(counts, key=lambda x: (-counts[x], x))[:6]


def mean_vec(vs) -> np.ndarray:
    v = np.mean(vs, axis=0)
    return v / (np.linalg.norm(v) or 1.0)
