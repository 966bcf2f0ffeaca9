"""A retried ``remember`` arriving several times at once is stored once, in
one server (concurrent calls through the real MCP client) and across two ``trimem serve``
processes on one memory folder; the session's ``n_messages`` stays the number stored."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from helpers import payload
from trimem.bench.forget_reach import stdio
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio


def call(session: str) -> dict:
    return {"namespace": "race", "session_id": session,
            "messages": [{"content": f"retried note {k} of {session}: the kettle is descaled",
                          "speaker": "Ivo", "ref": f"k{k}"} for k in range(3)]}


def stored(home: Path, sessions: list[str]) -> tuple[dict, dict]:
    sp = build_server(Settings(home=str(home), curation=False)).runtime.space("race")
    rows = sp.sources.all()
    per = {s: sorted(r.ref or "" for r in rows if r.session_id == s) for s in sessions}
    n_messages = {s: sess.n_messages if (sess := sp.sessions.get(s)) else None for s in sessions}
    return per, n_messages


async def test_four_identical_concurrent_calls_store_each_ref_once(server, home):
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"messages": [{"content": "warm up"}],
                                               "namespace": "warm-up"}))
        results = []

        async def one():
            results.append(payload(await c.call_tool("remember", call("s"))))

        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(one)
    per, n = stored(home, ["s"])
    print(f"in-process race: 4 calls x 3 refs, rows stored: {len(per['s'])}")
    assert per["s"] == ["k0", "k1", "k2"], per
    assert n["s"] == 3
    assert sum(r["stored"] for r in results) == 3
    assert len({tuple(r["source_ids"]) for r in results}) == 1   # every caller gets the same ids


@pytest.mark.slow
async def test_two_processes_racing_the_same_calls_store_each_ref_once(tmp_path):
    home, sessions = tmp_path / "home", [f"r{i}" for i in range(8)]
    async with Client(stdio(home), read_timeout_seconds=180) as a, \
            Client(stdio(home), read_timeout_seconds=180) as b:
        for c in (a, b):
            payload(await c.call_tool("remember", {"messages": [{"content": "warm up"}],
                                               "namespace": "warm-up"}))
        for s in sessions:   # each round: both processes, two calls each, all at once
            async with anyio.create_task_group() as tg:
                for c in (a, b, a, b):
                    tg.start_soon(c.call_tool, "remember", call(s))
    per, n = stored(home, sessions)
    rows = sum(len(v) for v in per.values())
    print(f"two-process race: {len(sessions)} rounds x 4 calls x 3 refs, rows stored: {rows} "
          f"(want {3 * len(sessions)})")
    assert all(v == ["k0", "k1", "k2"] for v in per.values()), per
    assert all(x == 3 for x in n.values()), n
