"""Provenance records, answerability and retry hints for the wiki recall.

The paper expands each selected trajectory into (claim, snapshot, source ref, timestamp) tuples.
Here the budget is spent on the raw source turns themselves (verbatim, through
``render.pack_sources``); which turns, in which order, is decided in ``scoring.py``. Every
packed turn is listed in the trace with its trajectory, snapshot, claims, ref and timestamp
(``provenance``); ``sources`` lists only what stands verbatim.

Answerability (the paper's z_q records it; without an LLM we judge it from the evidence):
evidence is *sufficient* when the best selected trajectory has b >= ``MIN_B`` (0.45) and the
packed turns contain at least ``MIN_COVER`` (0.5) of the query's content stems (names
included). Otherwise one controlled retry adds ``hints`` (the most frequent names / noun heads
of the top-3 selected trajectories that the query lacks) to the query, averages the two query
vectors and reroutes through 2t pages; if that is still insufficient, the recall abstains.
"""

from __future__ import annotations

import json

import numpy as np

from . import text as tx
from .store import SNAP

MIN_B = 0.45
MIN_COVER = 0.5


def provenance(space, packed_rows: list[dict], owner: dict[str, str]) -> list[dict]:
    """The (trajectory, snapshot, claims, ref, timestamp) record of each packed turn."""
    ids = [r["id"] for r in packed_rows]
    snaps = space.rows(SNAP, columns=["id", "source_ids", "claims"]) if ids else []
    by_src = {}
    for s in snaps:
        for i in s["source_ids"]:
            if i in set(ids):
                by_src[i] = s
    out = []
    for r in packed_rows:
        s = by_src.get(r["id"])
        claims = [c["id"] for c in json.loads(s["claims"]) if c["source_id"] == r["id"]] if s else []
        out.append({"source_id": r["id"], "ref": r.get("ref"), "timestamp": r.get("timestamp"),
                    "trajectory": owner.get(r["id"]), "snapshot": s["id"] if s else None,
                    "claims": claims})
    return out


def sufficiency(query_f: dict, chosen: list[dict], rows: list[dict]) -> dict:
    q = set(query_f["tokens"]) | {tx.stem(n) for n in query_f["names"]}
    have = set()
    for r in rows:
        have |= set(tx.tokens(r["text"])) | set(tx.tokens(r.get("speaker") or ""))
    cover = len(q & have) / len(q) if q else 1.0
    best_b = max((c["parts"]["b"] for c in chosen), default=0.0)
    ok = best_b >= MIN_B and cover >= MIN_COVER
    return {"sufficient": ok, "best_b": round(best_b, 4), "query_term_cover": round(cover, 4),
            "missing_terms": sorted(q - have)}


def hints(query_f: dict, chosen: list[dict], suff: dict) -> list[str]:
    """Retrieval hints for the one controlled retry: the missing query terms' best companions,
    i.e. the most frequent names / heads of the top-3 trajectories that the query lacks."""
    counts: dict[str, int] = {}
    for c in chosen[:3]:
        for x in c["row"]["names"] + c["row"]["heads"]:
            if x.lower() not in query_f["ents"]:
                counts[x] = counts.get(x, 0) + 1
    return sorted(counts, key=lambda x: (-counts[x], x))[:6]


def mean_vec(vs) -> np.ndarray:
    v = np.mean(vs, axis=0)
    return v / (np.linalg.norm(v) or 1.0)
