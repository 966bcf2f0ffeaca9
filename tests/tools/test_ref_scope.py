"""A ref belongs to its session: the same ref in two sessions is two messages, and forget and
curated memories read it that way (tools/refs.py)."""

from __future__ import annotations

import pytest

from helpers import error_text, payload, turns

pytestmark = pytest.mark.anyio


@pytest.fixture
async def two_sessions(client, server):
    """Sessions "a" and "b", each with its own message "t1" (and "a" with a "t2")."""
    await client.call_tool("remember", {"messages": turns("Ana's flat is in Lisbon.", "She cycles."),
                                        "session_id": "a"})
    await client.call_tool("remember", {"messages": turns("Ben's boat is called Gull."),
                                        "session_id": "b"})
    space = server.runtime.space("default")
    assert sorted(r.session_id for r in space.sources.by_refs(["t1"])) == ["a", "b"]
    return space


def texts(space) -> set[str]:
    return {r.text for r in space.sources.all()}


async def test_forget_refs_with_a_session_forgets_that_sessions_message_only(client, two_sessions):
    out = payload(await client.call_tool("forget", {"refs": ["t1"], "session_id": "a"}))
    assert out["removed_sources"] == 1 and out["refs"] == ["t1"] and out["not_found"] == []
    # b's t1 stays, and so does the rest of session a: session_id scoped the refs
    assert texts(two_sessions) == {"She cycles.", "Ben's boat is called Gull."}


async def test_an_ambiguous_ref_without_a_session_deletes_nothing(client, two_sessions):
    before = texts(two_sessions)
    rec = payload(await client.call_tool("recall", {"query": "boat"}))
    err = error_text(await client.call_tool("forget", {"refs": ["t1"],
                                                       "recall_ids": [rec["recall_id"]]}))
    assert 'ref "t1" names messages in 2 sessions ("a", "b")' in err and "session_id" in err
    assert texts(two_sessions) == before
    assert payload(await client.call_tool("explain", {"id": rec["recall_id"]}))  # not deleted either


async def test_a_ref_of_one_session_needs_no_session_id(client, two_sessions):
    out = payload(await client.call_tool("forget", {"refs": ["t2"]}))
    assert out["removed_sources"] == 1 and texts(two_sessions) == {
        "Ana's flat is in Lisbon.", "Ben's boat is called Gull."}
    gone = await client.call_tool("forget", {"refs": ["t2"], "session_id": "b"})
    assert "nothing to forget" in error_text(gone)


async def test_a_curated_memory_cites_its_own_sessions_message(client, two_sessions):
    fact = {"subject": "Ben", "relation": "owns", "object": "a boat", "refs": ["t1"]}
    res = payload(await client.call_tool("remember", {
        "messages": turns("Gull is moored in Porto.", prefix="u"), "session_id": "b",
        "curated": {"facts": [fact]}}))
    assert res["stored"] == 1
    b_t1 = [r.id for r in two_sessions.sources.by_refs(["t1"]) if r.session_id == "b"]
    memory = [m for m in two_sessions.memories.of_kind("fact") if m.origin == "host"]
    assert [m.source_ids for m in memory] == [b_t1]


async def test_a_curated_memory_cannot_cite_a_ref_of_several_other_sessions(client, two_sessions):
    before = texts(two_sessions)
    fact = {"subject": "someone", "relation": "said", "object": "something", "refs": ["t1"]}
    err = error_text(await client.call_tool("remember", {
        "messages": turns("Unrelated.", prefix="v"), "session_id": "c",
        "curated": {"facts": [fact]}}))
    assert 'ref "t1" names messages in 2 sessions' in err
    assert texts(two_sessions) == before   # the whole call was refused
    # a ref that one other session holds is cited from there, as before
    ok = payload(await client.call_tool("remember", {
        "messages": turns("Also unrelated.", prefix="w"), "session_id": "c",
        "curated": {"facts": [dict(fact, refs=["t2"])]}}))
    assert ok["stored"] == 1
