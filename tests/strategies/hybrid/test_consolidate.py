"""Consolidation is non-destructive: every merged/superseded memory stays reachable through
``explain`` and can be restored, and ``dry_run`` changes nothing on disk."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from helpers import listing, payload

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FILLER = ["Ana plays the violin in a small orchestra", "Ben collects vintage postcards from Japan",
          "Ana is learning to surf on weekends", "Ben volunteers at the animal shelter",
          "Ana bakes sourdough bread every Sunday", "Ben reads science fiction novels at night",
          "Ana grows tomatoes on her balcony", "Ben repairs old bicycles in his garage",
          "Ana paints watercolour landscapes", "Ben runs five kilometres before work",
          "Ana speaks three languages fluently", "Ben builds wooden furniture as a hobby"]


def fact(s, r, o, ref):
    return {"subject": s, "relation": r, "object": o, "context": "said in passing", "refs": [ref]}


def filler_fact(text: str, ref: str) -> dict:
    """A fact from a filler sentence: its first word, its second, the rest."""
    subject, relation, obj = text.split(" ", 2)
    return fact(subject, relation, obj, ref)


async def _store(client):
    sessions = [("c1", "2023-01-10T10:00:00", [fact("Ana", "lives in", "Lisbon", "c1:0"),
                                                 fact("Ben", "adopted", "a beagle puppy named Biscuit", "c1:1")]),
                ("c2", "2023-03-10T10:00:00", [fact("Ben", "adopted", "a beagle puppy named Biscuit", "c2:1")]),
                ("c3", "2023-06-10T10:00:00", [fact("Ana", "lives in", "Madrid", "c3:0")])]
    for k, (sid, when, facts) in enumerate(sessions):
        msgs = [{"content": f"turn {j} of {sid}: {FILLER[(3 * k + j) % len(FILLER)]}", "speaker": "Ana",
                 "ref": f"{sid}:{j}"} for j in range(3)]
        facts = [dict(f, timestamp=when) for f in facts] + [
            filler_fact(FILLER[(3 * k + j) % len(FILLER)], f"{sid}:2") for j in range(6)]
        payload(await client.call_tool("remember", {"messages": msgs, "session_id": sid,
                                                    "session_time": when, "curated": {"facts": facts}}))


async def test_consolidation_is_non_destructive_and_restorable(client, server, home):
    await _store(client)
    rt = server.runtime
    assert rt.curation.wait_idle(60)
    space = rt.space("default")
    assert space.upkeep.wait(60, flush=True)               # background compaction has settled
    n_active = len(space.memories.of_kind("fact"))
    before = listing(home)
    plan = payload(await client.call_tool("consolidate", {"dry_run": True, "min_cluster_size": 2}))
    assert listing(home) == before                         # a dry run changes nothing on disk
    hybrid_ops = [op for op in plan["operations"] if op.get("strategy") == "hybrid"]
    assert any(op["op"] == "merge" for op in hybrid_ops)
    facts = {m.id: m.text for m in rt.space("default").memories.of_kind("fact")}
    sup = [op for op in hybrid_ops if op["op"] == "supersede"]
    assert [(facts[op["into"]], [facts[i] for i in op["ids"]]) for op in sup] == \
        [("Ana lives in Madrid", ["Ana lives in Lisbon"])]   # same subject + relation, newer object

    seen = []

    async def progress(done, total, message):
        seen.append((done, total, message))

    res = await client.call_tool("consolidate", {"min_cluster_size": 2}, progress_callback=progress)
    out = payload(res)
    assert seen and any("cluster" in (m or "") for _, _, m in seen)
    ops = [op for op in out["operations"] if op.get("strategy") == "hybrid"]
    strip = lambda xs: [{k: v for k, v in op.items() if k != "done"} for op in xs]  # noqa: E731
    assert strip(ops) == strip(hybrid_ops)                 # the plan is what was done
    assert all(op["done"] for op in ops) and not any(op["done"] for op in hybrid_ops)
    retired = [(i, op) for op in ops for i in op["ids"]]
    assert retired and len(space.memories.of_kind("fact")) == n_active - len(retired)
    biscuit = [m for m in space.memories.of_kind("fact", status=None) if "Biscuit" in m.text]
    assert sorted(m.status for m in biscuit) == ["active", "merged"]
    for mid, op in retired:                                # every retired item is reachable ...
        ex = payload(await client.call_tool("explain", {"id": mid}))
        assert ex["record"]["status"] in ("merged", "superseded")
        link = ex["record"]["lineage"].get("merged_into") or ex["record"]["lineage"].get("superseded_by")
        assert link == op["into"] and ex["sources"]
        keep = payload(await client.call_tool("explain", {"id": op["into"]}))
        kept = keep["record"]["lineage"].get("absorbed", []) + keep["record"]["lineage"].get("supersedes", [])
        assert mid in {a["id"] for a in kept}
        assert any(h["op"] == "consolidate" for h in ex["history"])
    # ... the survivor still quotes the merged row's turn in a recall ...
    res = payload(await client.call_tool("recall", {"query": "Ben adopted a beagle puppy Biscuit",
                                                    "strategy": "hybrid"}))
    merged = next(m for m in biscuit if m.status == "merged")
    assert set(merged.source_ids) <= {s for i in res["items"] for s in i["source_ids"]}
    # ... and can be restored
    from trimem.strategies.hybrid.strategy import HybridStrategy

    env = rt.env("default")
    for mid, op in retired:
        assert HybridStrategy().restore(env, mid)["changed"]
        row = space.memories.get([mid])[0]
        assert row.status == "active" and row.lineage["history"][-1]["op"] == "restored"
        keep = space.memories.get([op["into"]])[0].lineage
        assert mid not in {a["id"] for a in keep.get("absorbed", []) + keep.get("supersedes", [])}
    assert len(space.memories.of_kind("fact")) == n_active
    detail = HybridStrategy().explain(env, retired[0][0])
    assert detail is not None
    assert detail["history"][-1]["op"] == "restored" and detail["sources"]


@pytest.mark.filterwarnings("ignore:precomputed_knn")
def test_handing_umap_its_neighbours_gives_the_embedding_umap_makes_itself():
    import umap

    from trimem.strategies.hybrid.consolidate import _exact_neighbours

    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((40, 384)).astype(np.float32)
    vecs[7] = vecs[3]                                   # a duplicate: a tie at distance 0
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    args: dict[str, Any] = dict(n_neighbors=10, n_components=5, metric="cosine", min_dist=0.0,
                                random_state=42, n_jobs=1)
    own = umap.UMAP(**args).fit(vecs)
    handed = umap.UMAP(**args, **_exact_neighbours(vecs, 10)).fit(vecs)
    assert own._small_data and not handed._small_data   # two code paths, one answer
    assert (own.graph_ != handed.graph_).nnz == 0
    assert np.array_equal(own.embedding_, handed.embedding_)
