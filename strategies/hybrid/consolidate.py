"""Offline consolidation (paper §3.2, appendix C): cluster, then merge and supersede in clusters.

Clustering is the paper's: the stored memories' embeddings (here the MiniLM vectors already in
the table, 384-d, instead of text-embedding-3-small's 1536-d) are reduced by UMAP (cosine,
10 neighbours, 5 components, min_dist 0) and clustered by HDBSCAN (Euclidean, excess of mass,
``min_cluster_size``, min_samples 1), in a short-lived child process (``cluster_child.py``):
umap, hdbscan, numba and sklearn are never imported by the server. Choices the paper leaves open:

* Episodes and tuples are clustered separately (a merge never crosses the two stores); a store
  too small for UMAP (< ``MIN_UMAP`` rows) is clustered on its raw unit vectors; ``random_state``
  is fixed so a plan and the run after it agree.
* Deterministic rules inside a cluster (``rules.py``): near-duplicates merge, a tuple with the
  same subject and relation and a newer, different object supersedes the older one. With an LLM
  configured, each cluster's plan comes from the model instead (``rules.llm_plan``), checked so
  it can only name rows of that cluster.
* A merge writes the merged text on the survivor (and embeds it again), so what the absorbed
  rows said stays searchable: the model's text when an LLM planned the cluster, else
  ``rules.merged_text`` (survivor first, then each absorbed sentence not already there, bounded);
  ``body.merged_text_by`` says who wrote it (``heuristic`` texts are rewritten by the host's
  model at the next ``consolidate`` with sampling), ``lineage.text_before`` keeps the
  survivor's own text.
* Nothing is destroyed: a merged row gets ``status="merged"`` and ``lineage.merged_into``; the
  survivor lists it in ``lineage.absorbed`` (with its sources, which recall still quotes); a
  superseded row gets ``status="superseded"`` and ``lineage.superseded_by``. :func:`restore`
  undoes either. ``dry_run`` computes the same plan and writes nothing.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from .cluster_proc import labels_in_child
from .rules import llm_plan, merged_text, rule_plan
from .store import KINDS, llm_usable

if TYPE_CHECKING:
    from ...storage.rows import Memory
    from ..space_api import StrategySpace
    from ..base import Env

log = logging.getLogger(__name__)
MIN_UMAP = 16
SMALL = 4096   # umap's own cut: below it, umap computes every pairwise distance (exact neighbours)


def _active(space: StrategySpace, kind: str) -> tuple[list[Memory], np.ndarray]:
    rows = sorted(space.memories.where({"kind": kind, "status": "active"}, vectors=True),
                  key=lambda r: r.id)
    return rows, np.asarray([r.vector for r in rows], dtype=np.float32)


def cluster(matrices: list[np.ndarray], min_cluster_size: int) -> list[np.ndarray]:
    """HDBSCAN labels (-1 = noise) of UMAP-reduced vectors (appendix C), each matrix (kind of
    memory) clustered apart, computed in one child process (:mod:`.cluster_proc`; the
    implementation: :func:`.cluster_child.labels_here`), so that the server never imports umap,
    numba, sklearn or hdbscan."""
    return labels_in_child(matrices, min_cluster_size)


def _exact_neighbours(vecs: np.ndarray, k: int) -> dict:
    """The neighbours umap would find itself, handed to it: below ``SMALL`` rows umap takes
    every pairwise distance with its own cosine and the ``k`` nearest of each row, in a numba
    function (``parallel=True``) that numba does not cache, so the first fit of every process
    spent ~8 s compiling it. The same distances (umap's cosine) and the same cut, made here,
    give the same graph and the same embedding (``tests/strategies/hybrid/test_consolidate.py``
    compares the two; rows at exactly equal distance at the k-th place may be taken in another
    order). At ``SMALL`` rows and more umap searches approximately (NN-descent), as before."""
    if len(vecs) >= SMALL:
        return {}
    import umap.distances  # lazy: umap, consolidation only
    from sklearn.metrics import pairwise_distances  # lazy: sklearn, consolidation only

    d = pairwise_distances(vecs, metric=umap.distances.cosine)  # pyright: ignore[reportArgumentType]  (sklearn takes callables)
    idx = np.argsort(d, axis=1)[:, :k]
    return {"precomputed_knn": (idx, np.take_along_axis(d, idx, axis=1), None),
            "force_approximation_algorithm": True}   # the path that reads precomputed_knn


def consolidate(env: Env, dry_run: bool = False, min_cluster_size: int = 10, progress=None) -> dict:
    t0 = time.perf_counter()
    space = env.space
    report = (lambda d, t, m: progress(d, t, m)) if progress else (lambda d, t, m: None)
    stores = {k: _active(space, k) for k in KINDS}
    before = {k: len(rows) for k, (rows, _) in stores.items()}
    ops, n_clusters, use_llm = [], 0, llm_usable(env.llm)
    report(0, 1, f"clustering {sum(before.values())} memories")
    groups = []
    kinds = [k for k, (rows, _) in stores.items() if rows]
    for kind, labels in zip(kinds, cluster([stores[k][1] for k in kinds], min_cluster_size)):
        rows, vecs = stores[kind]
        for c in sorted(set(labels.tolist()) - {-1}):
            idx = np.flatnonzero(labels == c)
            groups.append((kind, [rows[i] for i in idx], vecs[idx]))
    n_clusters = len(groups)
    for g, (kind, rows, vecs) in enumerate(groups):
        report(g, n_clusters, f"cluster {g + 1}/{n_clusters}: {len(rows)} {kind}s")
        plan = None
        if use_llm:
            try:
                plan = llm_plan(env.llm, kind, rows)
            except Exception as exc:  # the model failing must not stop consolidation
                log.warning("LLM consolidation of a cluster failed (%s); using rules", exc)
        if plan is None:
            plan = rule_plan(kind, rows, vecs)
        by_id = {r.id: r for r in rows}
        for op in plan:
            if op["op"] == "merge":   # the survivor's new text: the model's, else the rule's
                op["merged_text"] = op.pop("text", None) or merged_text(
                    [by_id[op["into"]].text] + [by_id[i].text for i in op["ids"]])
                op["text_by"] = op.get("text_by") or "heuristic"
            ops.append(dict(op, kind=kind, cluster=g))
    if not dry_run and ops:
        apply(space, ops, env.embed)
    for op in ops:
        op["done"] = not dry_run
    after = dict(before)
    for op in ops:
        after[op["kind"]] -= len(op["ids"])
    report(n_clusters, n_clusters, "done")
    total_b, total_a = sum(before.values()), sum(after.values())
    return {"before": before, "after": after, "clusters": n_clusters, "operations": ops,
            "active_before": total_b, "active_after": total_a,
            "compression": round(1 - total_a / total_b, 4) if total_b else 0.0,
            "dry_run": dry_run, "duration_s": round(time.perf_counter() - t0, 3)}


def _logged(lineage: dict, key: str, entry: dict) -> dict:
    """A copy of ``lineage`` with ``entry`` appended to its list ``key`` (made if absent)."""
    return {**lineage, key: [*lineage.get(key, []), entry]}


def apply(space: StrategySpace, ops: list[dict], embed=None) -> None:
    """Write the plan: statuses and lineage, and each survivor of a merge gets the merged text
    (re-embedded with ``embed``); the retired rows keep their texts and vectors."""
    ids = {i for op in ops for i in op["ids"] + [op["into"]]}
    new = {r.id: r for r in space.memories.where({"id": sorted(ids)}, vectors=True)}
    now = space.now().isoformat()
    for op in ops:
        into = op["into"]
        if into not in new:
            continue
        for i in op["ids"]:
            gone = new.get(i)
            if gone is None:
                continue
            keep = new[into]
            if op["op"] == "merge":
                gone = replace(gone, status="merged", lineage={**gone.lineage, "merged_into": into})
                new[into] = replace(keep, lineage=_logged(keep.lineage, "absorbed", {
                    "id": i, "source_ids": gone.source_ids, "refs": gone.refs, "at": now}))
            else:
                gone = replace(gone, status="superseded",
                               lineage={**gone.lineage, "superseded_by": into})
                new[into] = replace(keep, lineage=_logged(keep.lineage, "supersedes",
                                                          {"id": i, "at": now}))
            new[i] = replace(gone, lineage=_logged(gone.lineage, "history", {
                "at": now, "op": op["op"], "into": into, "why": op["why"]}))
    rewritten = []
    for op in ops:
        keep = new.get(op["into"])
        if op["op"] != "merge" or keep is None or not op.get("merged_text"):
            continue
        lin = keep.lineage if "text_before" in keep.lineage else {**keep.lineage,
                                                                  "text_before": keep.text}
        new[keep.id] = replace(keep, text=op["merged_text"],
                               body={**keep.body, "merged_text_by": op["text_by"]},
                               lineage=_logged(lin, "history", {"at": now, "op": "merged_text",
                                                                "by": op["text_by"]}))
        rewritten.append(keep.id)
    if rewritten and embed is not None:
        for i, vec in zip(rewritten, embed([new[i].text for i in rewritten])):
            new[i] = new[i].with_vector(vec)
    space.memories.add(list(new.values()))
    space.log.audit("consolidate", sorted(ids), {"strategy": "hybrid", "operations": ops})


def restore(env: Env, memory_id: str) -> dict:
    """Make a merged or superseded memory active again and detach it from its survivor.

    Returns ``{id, status, changed, was, released_from}`` (``was``: "merged" or "superseded";
    ``released_from``: the survivor, which no longer lists it); an active memory is left as it
    is (``changed`` false). Users reach it through ``trimem restore MEMORY_ID``."""
    space = env.space
    got = space.memories.where({"id": memory_id}, vectors=True)
    if not got:
        raise KeyError(f"no memory {memory_id!r}")
    row = got[0]
    if row.status == "active":
        return {"id": memory_id, "status": "active", "changed": False}
    lin, now = dict(row.lineage), space.now().isoformat()
    other_id = lin.pop("merged_into", None) or lin.pop("superseded_by", None)
    changed = []
    for other in space.memories.where({"id": other_id}, vectors=True) if other_id else []:
        olin = {**other.lineage, **{key: [a for a in other.lineage.get(key, [])
                                          if a["id"] != memory_id]
                                    for key in ("absorbed", "supersedes")}}
        olin = _logged(olin, "history", {"at": now, "op": "released", "id": memory_id})
        if not olin.get("absorbed") and "text_before" in olin:   # its own text again
            text = olin.pop("text_before")
            body = {k: v for k, v in other.body.items() if k != "merged_text_by"}
            other = replace(other, text=text, body=body, vector=env.embed([text])[0])
        changed.append(replace(other, lineage=olin))
    lin = _logged(lin, "history", {"at": now, "op": "restored", "was": row.status,
                                   "from": other_id})
    was = row.status
    space.memories.add([replace(row, status="active", lineage=lin)] + changed)
    space.log.audit("restore", [memory_id] + ([other_id] if other_id else []),
                {"strategy": "hybrid", "from": other_id, "was": was})
    return {"id": memory_id, "status": "active", "changed": True, "was": was,
            "released_from": other_id}


def explain_memory(env: Env, memory_id: str) -> dict | None:
    """A hybrid memory with its sources, merges and supersessions resolved (None if not ours)."""
    space = env.space
    found = space.memories.get([memory_id])
    if not found or found[0].kind not in KINDS:
        return None
    m = found[0]
    lin = m.lineage
    linked = [x for x in (lin.get("merged_into"), lin.get("superseded_by")) if x]
    linked += [a["id"] for a in lin.get("absorbed", []) + lin.get("supersedes", [])]
    others: dict[str | None, dict] = {o.id: {"id": o.id, "status": o.status, "text": o.text}
                                      for o in space.memories.get(linked)}
    srcs = space.sources.get(list(m.source_ids or []))
    return {"summary": f"hybrid {m.kind} ({m.origin}, {m.status})", "memory": m.as_dict(),
            "merged_into": others.get(lin.get("merged_into")),
            "superseded_by": others.get(lin.get("superseded_by")),
            "absorbed": [others.get(a["id"], a) for a in lin.get("absorbed", [])],
            "supersedes": [others.get(a["id"], a) for a in lin.get("supersedes", [])],
            "history": lin.get("history", []),
            "sources": [s.view("id", "ref", "session_id", "speaker", "text") for s in srcs]}
