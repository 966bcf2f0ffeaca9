"""forget is a hard delete (gone from disk); explain replays the recall's own trace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import error_text, payload, turns

pytestmark = pytest.mark.anyio
SECRET = "Quetzalcoatlus-7731 is my bank password"


def bytes_on_disk(home: Path, needle: bytes) -> list[str]:
    hits = []
    for root, _, files in os.walk(home):
        for f in files:
            p = Path(root, f)
            if needle in p.read_bytes():
                hits.append(str(p.relative_to(home)))
    return hits


async def test_forget_removes_text_from_disk_and_everything_derived(client, home):
    curated = {"facts": [{"subject": "me", "relation": "password is", "object": "Quetzalcoatlus-7731",
                          "refs": ["t2"]}]}
    res = payload(await client.call_tool("remember", {
        "messages": turns("I like tea.", SECRET, "Tomorrow is Friday."), "session_id": "s",
        "curated": curated}))
    rec = payload(await client.call_tool("recall", {"query": "bank password"}))
    assert SECRET in rec["context"]
    assert bytes_on_disk(home, b"Quetzalcoatlus")           # it really was written

    out = payload(await client.call_tool("forget", {"refs": ["t2"]}))
    assert out["removed_sources"] == 1 and out["removed_memories"] == 1
    assert out["removed_recalls"] == 1 and out["refs"] == ["t2"]
    assert bytes_on_disk(home, b"Quetzalcoatlus") == []     # not hidden: gone
    assert bytes_on_disk(home, b"quetzalcoatlu") == []      # not even as an index token
    # the rest is intact and still searchable
    rest = payload(await client.call_tool("recall", {"query": "tea Friday"}))
    assert {s["ref"] for s in rest["sources"]} == {"t1", "t3"}
    assert "no recall" in error_text(await client.call_tool("explain", {"id": rec["recall_id"]}))
    # the deletion itself is on record (ids and refs, not the text)
    left = payload(await client.call_tool("explain", {"id": res["source_ids"][0]}))
    assert left["kind"] == "source"


async def test_forget_a_whole_session(client):
    payload(await client.call_tool("remember", {"messages": turns("a cat", "a dog"), "session_id": "x"}))
    payload(await client.call_tool("remember", {"messages": turns("a fish", prefix="f"), "session_id": "y"}))
    out = payload(await client.call_tool("forget", {"session_id": "x"}))
    assert out["removed_sources"] == 2
    rec = payload(await client.call_tool("recall", {"query": "cat dog fish"}))
    assert [s["ref"] for s in rec["sources"]] == ["f1"]


async def test_explain_recall_is_the_recorded_trace(client):
    payload(await client.call_tool("remember", {"messages": turns(
        "Rui plays the cello in an orchestra.", "The orchestra tours Spain in June.",
        "Lunch was a francesinha.", "We painted the kitchen yellow.")}))
    rec = payload(await client.call_tool("recall", {"query": "Where does the orchestra tour?",
                                                    "strategy": "plain", "budget_tokens": 45}))
    exp = payload(await client.call_tool("explain", {"id": rec["recall_id"]}))
    t = exp["record"]
    assert exp["kind"] == "recall" and t["query"] == "Where does the orchestra tour?"
    assert [c["id"] for c in t["chosen"]] == [i["id"] for i in rec["items"]]
    assert all({"score", "why"} <= set(c) for c in t["chosen"])
    assert all("bm25_rank" in c or "dense_rank" in c for c in t["chosen"])
    assert t["left_out"] and all(c["why"] == "over budget" for c in t["left_out"])
    assert t["budget"]["chars_used"] == len(rec["context"]) <= t["budget"]["chars_allowed"]
    assert t["tokens"] == rec["tokens"]
    again = payload(await client.call_tool("explain", {"id": rec["recall_id"]}))
    assert again["record"] == t                          # replayed, not re-run


async def test_consolidate_dry_run_changes_nothing_on_disk(client, home, server):
    payload(await client.call_tool("remember", {"messages": turns("one", "two", "three")}))
    assert server.runtime.curation.wait_idle(60)   # background curation must not race the counts
    assert server.runtime.space("default").upkeep.wait(60, flush=True)   # nor idle compaction

    def snapshot():
        return sorted((str(p.relative_to(home)), p.stat().st_size, p.stat().st_mtime_ns)
                      for p in home.rglob("*") if p.is_file())

    before = snapshot()
    plan = payload(await client.call_tool("consolidate", {"dry_run": True}))
    assert plan["dry_run"] and plan["operations"] and snapshot() == before
    seen = []

    async def progress(done, total, message):
        seen.append((done, total, message))

    res = await client.call_tool("consolidate", {}, progress_callback=progress)
    out = payload(res)
    upkeep = [op for op in out["operations"] if "strategy" not in op]
    assert upkeep and all(op.get("done") for op in upkeep)
    assert out["before"] == out["after"] and out["compression_ratio"] == 1.0
    assert seen and seen[-1][2] == "done"
