"""Many clients at once, and two server processes on one TRIMEM_HOME: nothing lost or doubled."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from helpers import payload
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[2]
TOPICS = ["gardening", "chess", "sailing", "baking", "astronomy", "cycling", "pottery", "jazz"]


def batch(client_no: int, call_no: int, n: int = 4) -> list[dict]:
    t = TOPICS[client_no % len(TOPICS)]
    return [{"content": f"client {client_no} call {call_no} note {k}: I spent time on {t} today",
             "ref": f"c{client_no}-{call_no}-{k}", "speaker": f"user{client_no}"} for k in range(n)]


async def worker(c, client_no: int, calls: int, acked: list, ns: str = "shared") -> None:
    for call_no in range(calls):
        res = payload(await c.call_tool("remember", {
            "messages": batch(client_no, call_no), "namespace": ns,
            "session_id": f"session-{client_no}"}))
        acked.extend(zip(res["source_ids"], [m["ref"] for m in batch(client_no, call_no)]))
        rec = payload(await c.call_tool("recall", {"query": TOPICS[client_no % 8], "namespace": ns,
                                                   "strategy": "plain", "budget_tokens": 300}))
        assert rec["tokens"] <= 300


def check_exactly_once(home: Path, acked: list, ns: str = "shared") -> None:
    rows = build_server(Settings(home=str(home))).runtime.space(ns).sources.all()
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids)), "a source was stored twice"
    assert {i for i, _ in acked} == set(ids), "an acknowledged source is missing (or extra)"
    refs = [r.ref for r in rows]
    assert len(refs) == len(set(refs))


async def test_eight_clients_in_parallel_on_one_server(server, home):
    acked: list = []
    # one warm-up call loads the model, so the parallel part measures the store, not the load
    # (a remember: only remember creates the namespace the clients then share)
    async with Client(server) as c:
        warm = payload(await c.call_tool("remember", {"messages": [
            {"content": "warm up", "ref": "warm-up"}], "namespace": "shared"}))
    acked.append((warm["source_ids"][0], "warm-up"))

    async def one(client_no: int):
        async with Client(server) as c:
            await worker(c, client_no, calls=6, acked=acked)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(one, i)
    assert len(acked) == 8 * 6 * 4 + 1
    check_exactly_once(home, acked)


def stdio(home: Path) -> StdioServerParameters:
    entry = next(iter(json.loads((ROOT / "mcp.json").read_text())["mcpServers"].values()))
    env = dict(os.environ, TRIMEM_HOME=str(home))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return StdioServerParameters(command=entry["command"], args=entry["args"], env=env)


@pytest.mark.slow
async def test_two_server_processes_share_one_home(tmp_path):
    home = tmp_path / "home"
    acked: list = []

    async def process(p: int):
        async with Client(stdio(home), read_timeout_seconds=180) as c:
            async with anyio.create_task_group() as tg:   # two clients' worth of calls each
                for k in range(2):
                    tg.start_soon(worker, c, p * 2 + k, 5, acked)

    async with anyio.create_task_group() as tg:
        tg.start_soon(process, 0)
        tg.start_soon(process, 1)
    assert len(acked) == 4 * 5 * 4
    check_exactly_once(home, acked)
