"""Long tool calls report MCP progress: remember of many messages (embedding batch by batch, then
stored) and consolidate, heard through the client's progress_callback."""

from __future__ import annotations

import pytest

from helpers import payload

pytestmark = pytest.mark.anyio


async def test_remember_of_many_messages_reports_progress(client):
    heard = []

    async def cb(progress, total, message):
        heard.append((progress, total, message))

    msgs = [{"content": f"turn {i} about the garden and the {i % 7} roses", "ref": f"r{i}"}
            for i in range(600)]
    out = payload(await client.call_tool("remember", {"messages": msgs, "session_id": "big"},
                                         progress_callback=cb))
    assert out["stored"] == 600
    steps = [h[0] for h in heard]
    assert len(steps) > 2 and steps == sorted(steps) and steps[-2:] == [600, 600]
    assert all(h[1] == 600 for h in heard)
    assert [h[2] for h in heard] == ["embedding"] * (len(heard) - 1) + ["stored"]


async def test_a_short_remember_reports_once_and_works_without_a_callback(client):
    heard = []

    async def cb(progress, total, message):
        heard.append((progress, total, message))

    payload(await client.call_tool("remember", {"messages": [{"content": "hi"}]},
                                   progress_callback=cb))
    assert heard == [(1, 1, "stored")]
    payload(await client.call_tool("remember", {"messages": [{"content": "again"}]}))


async def test_consolidate_reports_progress(client):
    heard = []

    async def cb(progress, total, message):
        heard.append((progress, total, message))

    payload(await client.call_tool("remember", {"messages": [{"content": f"note {i}"}
                                                             for i in range(5)]}))
    payload(await client.call_tool("consolidate", {"dry_run": True}, progress_callback=cb))
    assert heard and heard[-1][0] == heard[-1][1]
