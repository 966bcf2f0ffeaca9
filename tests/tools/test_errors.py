"""Every tool's error paths: a clear message, and nothing written."""

from __future__ import annotations

import pytest

from helpers import error_text, payload, turns

pytestmark = pytest.mark.anyio


@pytest.fixture
async def seeded(client, server):
    payload(await client.call_tool("remember", {"messages": turns("hello there", "the sky is blue")}))
    assert server.runtime.curation.wait_idle(60)   # background curation must not race the counts
    return server.runtime.space("default")


def _count(space) -> tuple[int, dict]:
    return space.count_sources(), space.stats()


@pytest.mark.parametrize("args, expect", [
    ({"query": ""}, "query is empty"),
    ({"query": "   "}, "query is empty"),
    ({"query": "sky", "strategy": "telepathy"}, "strategy"),
    ({"query": "sky", "budget_tokens": 0}, "budget_tokens must be positive"),
    ({"query": "sky", "budget_tokens": -5}, "budget_tokens must be positive"),
    ({"query": "sky", "budget_tokens": 10**9}, "over the limit"),
    ({"query": "sky", "since": "last tuesday"}, "ISO-8601"),
    ({"query": "sky", "since": "2025-01-02", "until": "2025-01-01"}, "since is after until"),
    ({"query": "sky", "namespace": ""}, "namespace must not be empty"),
    ({"query": "sky", "namespace": "a\x00b"}, "control characters"),
    ({"query": "x" * 5000}, "limit is 4000"),
])
async def test_recall_errors(client, seeded, args, expect):
    assert expect in error_text(await client.call_tool("recall", args))


@pytest.mark.parametrize("messages, expect", [
    ([], "messages is empty"),
    ([{"content": ""}], "messages[0].content is empty"),
    ([{"content": "ok"}, {"content": "x" * 100_001}], "messages[1].content is 100001 characters"),
    ([{"content": "ok", "timestamp": "yesterday"}], "messages[0].timestamp"),
    ([{"content": "ok", "ref": "a\x00"}], "control characters"),
    ([{"content": "ok", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": {}}}}}}}}}}],
     "nested deeper"),
    ([{"content": "ok", "metadata": {"blob": "x" * 20_000}}], "bytes as JSON"),
    ([{"content": "ok", "speaker": "s" * 600}], "speaker is 600 characters"),
])
async def test_remember_errors_write_nothing(client, seeded, messages, expect):
    before = _count(seeded)
    assert expect in error_text(await client.call_tool("remember", {"messages": messages}))
    assert _count(seeded) == before


async def test_remember_rejects_unknown_fields(client, seeded):
    before = _count(seeded)
    res = await client.call_tool("remember", {"messages": [{"content": "ok", "colour": "red"}]})
    assert res.is_error and _count(seeded) == before


async def test_explain_and_forget_unknown_ids(client, seeded):
    assert "no memory or recall with id 'src_nope'" in error_text(
        await client.call_tool("explain", {"id": "src_nope"}))
    assert "no recall 'rcl_nope'" in error_text(await client.call_tool("explain", {"id": "rcl_nope"}))
    assert "say what to forget" in error_text(await client.call_tool("forget", {}))
    before = _count(seeded)
    assert "nothing to forget" in error_text(await client.call_tool("forget", {"refs": ["zzz"]}))
    assert _count(seeded) == before


async def test_consolidate_rejects_bad_cluster_size(client, seeded):
    assert "min_cluster_size" in error_text(
        await client.call_tool("consolidate", {"min_cluster_size": 1}))


@pytest.mark.parametrize("hostile", ["x' OR '1'='1", "a\\'; DROP TABLE sources; --", "' OR 1=1 --",
                                     "\\", "%", "\"quoted\""])
async def test_injection_in_filters_matches_nothing(client, seeded, hostile):
    before = _count(seeded)
    msg = error_text(await client.call_tool("forget", {"refs": [hostile]}))
    assert "nothing to forget" in msg and _count(seeded) == before
    msg = error_text(await client.call_tool("forget", {"session_id": hostile}))
    assert "nothing to forget" in msg and _count(seeded) == before
    assert error_text(await client.call_tool("explain", {"id": hostile}))
    # hostile text as a query is just words
    payload(await client.call_tool("recall", {"query": hostile, "strategy": "plain"}))
