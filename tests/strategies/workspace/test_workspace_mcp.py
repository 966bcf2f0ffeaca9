"""The workspace strategy end to end, through the real in-memory MCP client: curation into
threads and a graph, recall with verbatim sources, explain of the recall and of a thread,
forget removing the threads that cite deleted sources, consolidate rebuilding the graph."""

from __future__ import annotations

import pytest

import numpy as np

from helpers import payload
from trimem.strategies.workspace import cache, store

pytestmark = pytest.mark.anyio

TRIP = ["I just got back from Lisbon, the trip was amazing.", "Did you see the tram 28 up the hill?",
        "Yes, and we ate pastel de nata at a bakery in Belem.", "Lisbon sounds lovely, who went with you?",
        "My sister Carla came along, she planned the whole trip.",
        "Work has been hectic, the quarterly report is due Friday.",
        "My manager wants the sales figures split by region.", "Spreadsheets all week, I am tired of them."]
POTTERY = ["I signed up for a pottery class on Tuesdays.", "Nice, what did you make first?",
           "A lopsided bowl, but Carla says it has character.", "Clay is so relaxing after work.",
           "Next month we glaze the pieces in the kiln."]


def msgs(texts, prefix):
    return [{"content": t, "speaker": "Ana" if i % 2 == 0 else "Bo", "ref": f"{prefix}{i}"}
            for i, t in enumerate(texts)]


async def _load(client, server):
    payload(await client.call_tool("remember", {"messages": msgs(TRIP, "a"), "session_id": "s1",
                                                "session_time": "2024-05-01T10:00:00"}))
    payload(await client.call_tool("remember", {"messages": msgs(POTTERY, "b"), "session_id": "s2",
                                                "session_time": "2024-06-01T10:00:00"}))
    assert server.runtime.curation.wait_idle(60)
    space = server.runtime.space("default")
    store.declare(space)
    return space


async def test_recall_explain_forget_consolidate(client, server):
    space = await _load(client, server)
    threads = [t for t in space.derived.rows(store.THREADS) if t["scheme"] == "topic"]
    assert {t["session_id"] for t in threads} == {"s1", "s2"}
    covered = sorted(s for t in threads if t["session_id"] == "s1" for s in t["source_ids"])
    assert len(covered) == len(TRIP)                        # every unit in exactly one thread
    edges = space.derived.rows(store.EDGES)
    assert any(e["etype"] == "adjacent" and e["src_session"] != e["dst_session"] for e in edges)

    rec = payload(await client.call_tool("recall", {"query": "Who planned the Lisbon trip?",
                                                    "strategy": "workspace", "budget_tokens": 120}))
    assert rec["strategy"] == "workspace" and rec["tokens"] <= 120
    assert rec["context"].startswith("<memory") and "[2024-05-01 (Wed)]" in rec["context"]
    assert rec["sources"] and all(s["text"] in rec["context"] for s in rec["sources"])
    assert "a4" in {s["ref"] for s in rec["sources"]}       # Carla planned it
    assert all(i["kind"] == "unit" and i["role"] in ("anchor", "bridge", "context")
               for i in rec["items"])

    exp = payload(await client.call_tool("explain", {"id": rec["recall_id"]}))
    tr = exp["record"]
    assert tr["seeds"] and all({"thread", "r0", "why"} <= set(s) for s in tr["seeds"])
    assert all({"thread", "score", "hop"} <= set(t) for t in tr["neighbourhood"])
    assert set(tr["demand"]["delta"]) == {"anchor", "bridge", "context"}
    step = tr["chosen"][0]
    assert {"roles", "role", "phi", "alpha", "pi", "gain", "gain_parts", "phase"} <= set(step)
    assert step["gain"] == pytest.approx(sum(step["gain_parts"].values()), abs=1e-3)
    assert tr["left_out"] and all(c["why"] for c in tr["left_out"])    # the tight budget binds
    assert tr["candidates"] == tr["selected"] + tr["left_out_total"]

    assert all("head" not in t for t in tr["neighbourhood"])   # no copied text in the log
    about = payload(await client.call_tool("explain", {"id": tr["chosen"][0]["thread"]}))
    assert about["sources"] and "head:" in about["summary"] and about["record"]["edges"]

    gone = payload(await client.call_tool("forget", {"refs": ["a4"]}))["source_ids"][0]
    assert not [t for t in space.derived.rows(store.THREADS) if gone in t["source_ids"]]
    assert server.runtime.curation.wait_idle(60)           # the rest of s1 is segmented again
    s1 = [t for t in space.derived.rows(store.THREADS) if t["session_id"] == "s1" and t["scheme"] == "topic"]
    assert sum(len(t["source_ids"]) for t in s1) == len(TRIP) - 1
    assert not [e for e in space.derived.rows(store.EDGES)
                if e["src"] not in {t["id"] for t in space.derived.rows(store.THREADS)}]

    out = payload(await client.call_tool("consolidate", {"dry_run": False}))
    assert out is not None
    assert space.derived.count_rows(store.EDGES) > 0


async def test_workspace_falls_back_to_plain_before_curation(client, server):
    rt = server.runtime
    rt.curation.delay_s = 30.0                              # keep the session queued
    payload(await client.call_tool("remember", {"messages": msgs(POTTERY, "b"), "session_id": "s"}))
    rec = payload(await client.call_tool("recall", {"query": "pottery class", "strategy": "workspace"}))
    assert "fell back to plain" in rec["route_reason"] and rec["sources"]


def _view(snap) -> dict:
    return {
        "ids": {s: sorted(v) for s, v in snap.ids.items()},
        "threads": {t: {c: str(v) for c, v in r.as_dict(vector=False).items()} for t, r in snap.threads.items()},
        "unit_thread": snap.unit_thread,
        "adj": {s: {t: sorted(nb) for t, nb in a.items() if nb} for s, a in snap.adj.items()},
        "counts": snap.counts,
    }


async def test_snapshot_is_patched_by_curation_and_equals_a_fresh_read(client, server, monkeypatch):
    monkeypatch.setattr(cache, "RECHECK_S", 1e9)   # only the patch can make a snapshot current
    rt = server.runtime
    payload(await client.call_tool("remember", {"messages": msgs(TRIP, "a"), "session_id": "s1",
                                                "session_time": "2024-05-01T10:00:00"}))
    assert rt.curation.wait_idle(60)
    space = rt.space("default")
    store.declare(space)
    first = cache.snapshot(cache.of(rt.context("default")), space)
    payload(await client.call_tool("remember", {"messages": msgs(POTTERY, "b"), "session_id": "s2",
                                                "session_time": "2024-06-01T10:00:00"}))
    assert rt.curation.wait_idle(60)
    more = [{"content": "Carla wants to go back to Lisbon in the autumn.", "speaker": "Ana",
             "ref": "a-more"}]
    payload(await client.call_tool("remember", {"messages": more, "session_id": "s1"}))
    assert rt.curation.wait_idle(60)                  # s1 is segmented again: threads replaced
    patched = cache.snapshot(cache.of(rt.context("default")), space)
    assert patched is not first and any(t.session_id == "s2" for t in patched.threads.values())
    assert patched.units is first.units                # patched in place of a re-read
    cache.of(rt.context("default")).invalidate()
    fresh = cache.snapshot(cache.of(rt.context("default")), space)
    assert fresh is not patched
    assert _view(patched) == _view(fresh)
    for s, ids in fresh.ids.items():
        at = {t: i for i, t in enumerate(patched.ids[s])}
        assert np.allclose(patched.mats[s][[at[t] for t in ids]], fresh.mats[s])


async def test_a_recall_during_curation_keeps_the_snapshot_and_a_failed_write_rereads(
        client, server, monkeypatch):
    monkeypatch.setattr(cache, "RECHECK_S", 0.0)    # every call would re-count the tables
    space = await _load(client, server)
    rt = server.runtime
    snaps = cache.of(rt.context("default"))
    snap = cache.snapshot(snaps, space)
    t = next(iter(snap.threads.values()))
    with snaps.writing():                            # this process is half-way through a write
        space.derived.delete_rows(store.THREADS, {"id": [t.id]})
        assert cache.snapshot(snaps, space) is snap   # not a re-read of the half-written graph
    fresh = cache.snapshot(snaps, space)             # the write "failed": no note, counts moved
    assert fresh is not snap and t.id not in fresh.threads


async def test_units_are_read_from_the_sources_copy_and_kept_only_without_it(client, server,
                                                                              tmp_path):
    """While the sources' in-process copy is held, the graph snapshot keeps no unit rows or
    vectors of its own (each was a second copy of a vector); a store whose sources are past the
    copy's bound keeps them in its LRU. Both answer the same recall."""
    from mcp import Client

    from trimem.server.app import build_server
    from trimem.server.settings import Settings

    asks = [{"query": q, "strategy": "workspace", "budget_tokens": 200}
            for q in ("Who planned the Lisbon trip?", "What happens in the pottery class?")]
    await _load(client, server)
    held = [payload(await client.call_tool("recall", a))["context"] for a in asks]
    snap = cache.snapshot(cache.of(server.runtime.context("default")), server.runtime.space("default"))
    assert server.runtime.space("default").sources.copied() and not snap.units

    other = build_server(Settings(home=str(tmp_path / "uncopied"), source_copy_max_rows=0))
    async with Client(other) as c:
        await _load(c, other)
        kept = [payload(await c.call_tool("recall", a))["context"] for a in asks]
        space = other.runtime.space("default")
        snap = cache.snapshot(cache.of(other.runtime.context("default")), space)
        assert not space.sources.copied() and len(snap.units) >= 5
    other.runtime.close()
    assert kept == held
