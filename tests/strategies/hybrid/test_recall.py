"""Hybrid recall end to end through the in-memory MCP client: k / 2k retrieval, notes with their
source quotes, honest ``sources``, and ``explain(recall_id)``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from helpers import error_text, payload
from trimem.strategies.base import RecallRequest
from trimem.strategies.options import RecallOptions
from trimem.strategies.hybrid.strategy import HybridStrategy

pytestmark = pytest.mark.anyio


def _filler(n: int) -> list[dict]:
    topics = ["guitar lessons", "marathon training", "sourdough baking", "chess club", "bird watching",
              "kayaking trips", "vegetable garden", "photography course", "salsa dancing",
              "rock climbing", "knitting scarves", "astronomy nights"]
    return [{"content": f"I spent the weekend on {topics[i % len(topics)]} with my cousin number {i}.",
             "speaker": "Ana" if i % 2 else "Ben", "ref": f"f{i}"} for i in range(n)]


async def test_top_k_episodes_and_top_2k_tuples(client, server):
    for s in range(12):     # 12 sessions of 10 turns: > 10 episodes, > 20 tuples
        payload(await client.call_tool("remember", {
            "messages": [dict(m, ref=f"{s}-{m['ref']}") for m in _filler(10)],
            "session_id": f"f{s}", "session_time": f"2023-0{1 + s % 9}-1{s % 9}T10:00:00"}))
    rt = server.runtime
    assert rt.curation.wait_idle(120)
    env = rt.env("default")
    strat = HybridStrategy()
    out = strat.recall(env, RecallRequest("who went kayaking?", 2000))
    assert len(out.trace["episodes"]) == 10 and len(out.trace["facts"]) == 20
    out = strat.recall(env, RecallRequest("who went kayaking?", 2000, options=RecallOptions.parse({"k": 3})))
    assert len(out.trace["episodes"]) == 3 and len(out.trace["facts"]) == 6
    assert len(out.context) <= 2000 * 4


async def test_recall_through_mcp_and_explain(client, server, remember_all):
    await remember_all(client)
    assert server.runtime.curation.wait_idle(60)
    res = payload(await client.call_tool("recall", {"query": "What is the name of Ben's puppy?",
                                                    "strategy": "hybrid", "budget_tokens": 400}))
    assert res["strategy"] == "hybrid" and res["tokens"] <= 400
    ctx = res["context"]
    assert ctx.startswith("<memory") and ctx.rstrip().endswith("</memory>")
    # every listed source stands verbatim in the context; the puppy turn is among them
    assert res["sources"] and all(s["text"] in ctx for s in res["sources"])
    assert "s1:2" in {s["ref"] for s in res["sources"]}
    notes = [i for i in res["items"] if i["kind"] in ("fact", "episode")]
    assert notes and any("Biscuit" in i["text"] for i in notes)
    quoted = {s["id"] for s in res["sources"]}
    puppy = next(i for i in notes if "adopted" in i["text"])
    assert set(puppy["source_ids"]) <= quoted   # the tuple's source quote is in the context
    ex = payload(await client.call_tool("explain", {"id": res["recall_id"]}))
    rec = ex["record"]
    assert ex["kind"] == "recall" and rec["strategy"] == "hybrid"
    assert rec["episodes"] and rec["facts"] and rec["budget"]["chars_used"] <= 1600
    assert all("why" in e and "score" in e for e in rec["episodes"] + rec["facts"])
    assert {c["id"] for c in rec["chosen"]} == {i["id"] for i in res["items"] if i["kind"] == "source"}
    # a memory id from the recall explains itself with its sources
    mem = payload(await client.call_tool("explain", {"id": puppy["id"]}))
    assert mem["kind"] == "memory" and mem["sources"][0]["ref"] == "s1:2"


async def test_time_filter_and_empty_namespace(client, server, remember_all):
    await remember_all(client, namespace="tf")
    assert server.runtime.curation.wait_idle(60)
    res = payload(await client.call_tool("recall", {
        "query": "where does Ana live?", "strategy": "hybrid", "namespace": "tf",
        "since": "2023-07-01T00:00:00"}))
    assert res["sources"] and all(s["timestamp"] >= "2023-07-01" for s in res["sources"])
    empty = await client.call_tool("recall", {"query": "anything", "strategy": "hybrid",
                                              "namespace": "nothing-here"})
    assert 'no namespace "nothing-here"' in error_text(empty)


async def test_forget_removes_derived_memories_and_recurates(client, server, remember_all):
    await remember_all(client)
    rt = server.runtime
    assert rt.curation.wait_idle(60)
    space = rt.space("default")
    gone = space.sources.by_refs(["s1:2"])[0].id
    assert space.memories.citing({gone})
    payload(await client.call_tool("forget", {"refs": ["s1:2"]}))
    assert rt.curation.wait_idle(60)
    assert not space.memories.citing({gone})
    s1 = [m for m in space.memories.of_kind("fact") if m.session_id == "s1"]
    assert s1 and not any("adopted" in m.text for m in s1)


async def test_undated_memories_are_outside_any_time_window(client, server, remember_all):
    """One rule for every strategy (RecallRequest.in_window, as the storage filter does): a
    row without a timestamp is outside any since/until window, and inside when none is set."""
    from trimem.strategies.hybrid.retrieve import search_memories

    await remember_all(client, namespace="undated")
    rt = server.runtime
    assert rt.curation.wait_idle(60)
    env = rt.env("undated")
    fact = next(m for m in env.space.memories.of_kind("fact") if "Madrid" in m.text)
    qv = env.embed_query("Ana lives in Madrid")
    env.space.memories.add([replace(fact, id="fct_undated", timestamp=None, vector=qv,
                                    refs=list(fact.refs or []),
                                    source_ids=list(fact.source_ids or []))])
    assert env.space.memories.get(["fct_undated"])[0].timestamp is None
    found = {}
    for name, window in {"none": {}, "since": {"since": fact.timestamp.replace(year=1900)},
                         "until": {"until": fact.timestamp.replace(year=2999)}}.items():
        req = RecallRequest(query="Ana lives in Madrid", budget_tokens=2000, **window)
        rows, _ = search_memories(env, req, qv, "fact", 50, fts=True)
        found[name] = {r.id for r in rows}
    assert "fct_undated" in found["none"]
    assert "fct_undated" not in found["since"] and "fct_undated" not in found["until"]
    assert fact.id in found["since"] and fact.id in found["until"]   # the dated one stays


async def test_a_question_naming_a_speaker_is_searched_as_plain_searches_it(client, server):
    """The speaker a question names is who said it, not a word to match: hybrid's turn search
    is the one every strategy shares, with the name-free query and the named speaker's own
    turns as lists of their own (``names=0`` searches the query as asked)."""
    payload(await client.call_tool("remember", {"messages": _filler(24), "session_id": "s"}))
    assert server.runtime.curation.wait_idle(60)
    env = server.runtime.env("default")
    strat = HybridStrategy()
    out = strat.recall(env, RecallRequest("What did Ana say about kayaking trips?", 1000))
    chosen = out.trace["chosen"]
    assert any("speaker_rank" in c for c in chosen) and any("content_rank" in c for c in chosen)
    off = strat.recall(env, RecallRequest("What did Ana say about kayaking trips?", 1000,
                                          options=RecallOptions.parse({"names": 0})))
    assert not any("speaker_rank" in c or "content_rank" in c for c in off.trace["chosen"])
