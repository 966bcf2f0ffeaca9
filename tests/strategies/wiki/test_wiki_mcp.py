"""The wiki strategy end to end through the in-memory MCP client (real store, real embedder)."""

import pytest

from helpers import payload
from trimem.strategies.wiki import pages, route, store
from trimem.tools.wiki_pages import read_page

pytestmark = pytest.mark.anyio

MOVES = [("s1", "2023-01-10T10:00:00Z", ["I moved to Berlin last month for a new job.",
                                          "Berlin winters are grey but the museums are great."]),
         ("s2", "2023-04-02T10:00:00Z", ["Big news: I moved to Lisbon two weeks ago!",
                                          "The tram rides in Lisbon are lovely."]),
         ("s3", "2023-09-05T10:00:00Z", ["Update: I moved to Toronto yesterday.",
                                          "My dog Rex loves the parks in Toronto."])]


async def remember_all(client, server):
    for sid, when, texts in MOVES:
        msgs = [{"content": t, "speaker": "Ana", "ref": f"{sid}-{i}", "timestamp": when}
                for i, t in enumerate(texts)]
        payload(await client.call_tool("remember", {"messages": msgs, "session_id": sid,
                                                    "session_time": when}))
    assert server.runtime.curation.wait_idle(60)
    space = server.runtime.space("default")
    store.ensure(space)
    return space


async def test_moves_city_twice_page_shows_current_claim_and_explain_the_history(client, server):
    space = await remember_all(client, server)
    moves = [c for c in space.derived.rows(store.CLAIM) if c["slot"] == "ana|residence"]
    current = [c for c in moves if c["status"] == "active"]
    assert [c["ref"] for c in current] == ["s3-0"]
    page = read_page(server.runtime, "default", "entity-ana")
    assert "I moved to Toronto yesterday." in page.split("## history")[0]
    assert "revised" in page.split("## history")[1]
    exp = payload(await client.call_tool("explain", {"id": current[0]["id"]}))
    hist = exp["record"]["history"]
    assert [h["ref"] for h in hist] == ["s1-0", "s2-0", "s3-0"]
    assert [h["op"] for h in hist] == ["add", "revise", "revise"]
    assert [h["status"] for h in hist] == ["revised", "revised", "active"]
    assert {s["ref"] for s in exp["sources"]} == {"s1-0", "s2-0", "s3-0"}


async def test_routing_and_recall_explained(client, server):
    space = await remember_all(client, server)
    kinds = {p["type"] for p in space.derived.rows(pages.PAGE, columns=["id", "type"])}
    assert {"index", "entity", "topic", "inventory"} <= kinds
    qv = server.runtime.env("default").embed_query("Where does Ana live now?")
    f = route.query_features("Where does Ana live now?")
    routed = route.route_pages(space, qv, "Where does Ana live now?", f, 15)
    assert routed and all(x.page.type != "index" for x in routed)
    assert routed[0].parts["S_p"] >= routed[-1].parts["S_p"]
    out = payload(await client.call_tool("recall", {"query": "Which city did Ana move to?",
                                                    "strategy": "wiki"}))
    assert out["tokens"] <= 2000
    refs = {s["ref"] for s in out["sources"]}
    assert {"s1-0", "s2-0", "s3-0"} <= refs
    for s in out["sources"]:
        assert s["text"] in out["context"]
    exp = payload(await client.call_tool("explain", {"id": out["recall_id"]}))["record"]
    assert exp["pages_routed"] and {"S_p", "sem", "lex", "ent"} <= set(exp["pages_routed"][0])
    assert exp["candidate_universe"] >= len(exp["selected"]) > 0
    assert {"b", "gain", "cov", "red", "src"} <= set(exp["selected"][0])
    assert exp["candidates"] and "answerability" in exp and exp["evidence"][0]["trajectory"]


async def test_a_ranking_only_ask_returns_the_same_recollection_without_the_trace(client, server):
    """auto's vote asks with ``ranking_only``: the same items, context, sources and reason,
    and none of the trace (provenance, candidates) it would not keep."""
    from helpers import full_and_ranking_only

    await remember_all(client, server)
    full, lean = full_and_ranking_only("wiki", server.runtime.env("default"),
                                       "Which city did Ana move to?")
    assert "Toronto" in lean.context
    assert full.trace["evidence"] and full.trace["evidence"][0]["why"] and lean.trace == {}


async def test_forget_removes_claims_and_snapshots_of_deleted_sources(client, server):
    space = await remember_all(client, server)
    gone = [r.id for r in space.sources.by_refs(["s2-0"])]
    payload(await client.call_tool("forget", {"refs": ["s2-0"]}))
    assert server.runtime.curation.wait_idle(60)
    assert not [c for c in space.derived.rows(store.CLAIM) if c["source_id"] in gone]
    assert not [s for s in space.derived.rows(store.SNAP) if set(s["source_ids"]) & set(gone)]
    assert all("Lisbon two weeks" not in p["text"] for p in space.derived.rows(pages.PAGE))
    assert all("Lisbon two weeks" not in t["state"] + t["title"] for t in space.derived.rows(store.TRAJ))
    moves = [c for c in space.derived.rows(store.CLAIM) if c["slot"] == "ana|residence"]
    assert sorted(c["ref"] for c in moves) == ["s1-0", "s3-0"]
