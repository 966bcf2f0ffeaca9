"""The host's own model through MCP sampling, answered by a real ``mcp.Client``'s
``sampling_callback`` (scripted: a deterministic curator, garbage, a refusal, a host that never
answers). Both protocol versions: 2026-07-28 (the Sample travels in an InputRequiredResult) and
2025-11-25 (a back-channel request, time-bounded). Nothing is lost when the host fails."""

from __future__ import annotations

import time

import anyio

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from helpers import payload
from sampling_host import Host
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio

S1 = [{"content": "I adopted a beagle named Biscuit last Saturday!", "speaker": "Ben", "ref": "m1"},
      {"content": "Biscuit sleeps on my bed every night.", "speaker": "Ben", "ref": "m2"},
      {"content": "I live in Lisbon and I love the trams.", "speaker": "Ana", "ref": "m3"}]


def make(home, **kw):
    return build_server(Settings(home=str(home), **kw))


async def _remember(server, c):
    payload(await c.call_tool("remember", {"messages": S1, "session_id": "s1",
                                           "session_time": "2023-05-08T10:00:00"}))
    assert server.runtime.curation.wait_idle(60)
    space = server.runtime.space("default")
    rows = space.memories_of_kind("fact") + space.memories_of_kind("episode")
    assert rows and {r["origin"] for r in rows} == {"heuristic"}
    return space


def _rows(space):
    return space.memories_of_kind("fact") + space.memories_of_kind("episode")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_consolidate_curates_through_the_hosts_model(home, mode):
    server, host = make(home), Host("good")
    async with Client(server, mode=mode, sampling_callback=host) as c:
        space = await _remember(server, c)
        res = await c.call_tool("consolidate", {})
        out = payload(res)
        (req,) = host.requests
        assert "Temporal precision" in req.system_prompt and "HostOut" in req.system_prompt
        assert '"speaker": "Ben", "text": "I adopted a beagle' in req.messages[0].content.text
        assert out["host_model"]["used"] and out["host_model"]["sessions"] == ["s1"]
        assert "scripted-model" in res.content[0].text
        rows = _rows(space)
        assert {r["origin"] for r in rows} == {"sampled"}
        assert {r["body"]["written_by"] for r in rows} == {"sampling:scripted-model"}
        ben = next(r for r in rows if r["kind"] == "fact" and r["body"]["subject"] == "Ben")
        assert ben["refs"] == ["m1"] and "6 May 2023" in ben["text"]
        ana = next(r for r in rows if r["kind"] == "fact" and r["body"]["subject"] == "Ana")
        assert ana["refs"] == ["m1", "m2", "m3"]        # an invented label cites the session
        exp = payload(await c.call_tool("explain", {"id": ben["id"]}))
        assert "written by sampling:scripted-model" in exp["summary"]
        assert len(space.sources_by_session("s1")) == 3
        # the session is not asked about again, and background curation keeps the host's rows
        out = payload(await c.call_tool("consolidate", {}))
        assert len(host.requests) == 1 and not out["host_model"]["used"]
        server.runtime.curation.curate_now("default", "s1")
        assert {r["origin"] for r in _rows(space)} == {"sampled"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_garbage_keeps_the_heuristics(home, mode):
    server, host = make(home), Host("garbage")
    async with Client(server, mode=mode, sampling_callback=host) as c:
        space = await _remember(server, c)
        before = sorted(r["id"] for r in _rows(space))
        out = payload(await c.call_tool("consolidate", {}))
        assert host.requests and not out["host_model"]["used"]
        assert "answer rejected" in out["host_model"]["why"]
        assert sorted(r["id"] for r in _rows(space)) == before
        assert len(space.sources_by_session("s1")) == 3


async def test_a_refusal_over_the_back_channel_is_not_an_error(home):
    server, host = make(home), Host("refuse")
    async with Client(server, mode="legacy", sampling_callback=host) as c:
        space = await _remember(server, c)
        out = payload(await c.call_tool("consolidate", {}))
        assert host.requests and "declined" in out["host_model"]["why"]
        assert {r["origin"] for r in _rows(space)} == {"heuristic"}


async def test_a_refusal_on_the_stateless_protocol_loses_nothing(home):
    """On 2026-07-28 the client itself ends the call when its callback refuses (the server
    never hears of it): the session keeps its heuristic memories and sources."""
    server, host = make(home), Host("refuse")
    async with Client(server, sampling_callback=host) as c:
        space = await _remember(server, c)
        with pytest.raises(MCPError, match="rejected"):
            await c.call_tool("consolidate", {})
        assert {r["origin"] for r in _rows(space)} == {"heuristic"}
        assert len(space.sources_by_session("s1")) == 3
        rec = payload(await c.call_tool("recall", {"query": "Ben's dog", "strategy": "hybrid"}))
        assert "m1" in {s["ref"] for s in rec["sources"]}


async def test_a_host_that_never_answers_is_timed_out(home):
    server, host = make(home, sampling_timeout_s=1.5), Host("hang")
    async with Client(server, mode="legacy", sampling_callback=host) as c:
        space = await _remember(server, c)
        t0 = time.perf_counter()
        out = payload(await c.call_tool("consolidate", {}))
        assert time.perf_counter() - t0 < 20
        assert "did not answer within 1.5 s" in out["host_model"]["why"]
        assert {r["origin"] for r in _rows(space)} == {"heuristic"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_no_request_without_capability_or_permission(home, mode):
    server = make(home)
    async with Client(server, mode=mode) as c:               # no sampling capability
        await _remember(server, c)
        out = payload(await c.call_tool("consolidate", {}))
        assert out["host_model"] == {"used": False, "why": "the client does not offer sampling"}
    host = Host("good")
    async with Client(make(home, llm="none"), mode=mode, sampling_callback=host) as c:
        out = payload(await c.call_tool("consolidate", {}))
        assert not host.requests and out["host_model"]["why"] == "TRIMEM_LLM=none"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sampling_over_stdio(tmp_path, mode):
    import json
    import os
    import sys
    from pathlib import Path

    from mcp import StdioServerParameters

    root = Path(__file__).resolve().parents[2]
    entry = next(iter(json.loads((root / "mcp.json").read_text())["mcpServers"].values()))
    env = dict(os.environ, **(entry.get("env") or {}), TRIMEM_HOME=str(tmp_path / "home"))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    host = Host("good")
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd=str(root))
    async with Client(params, mode=mode, sampling_callback=host, read_timeout_seconds=120) as c:
        payload(await c.call_tool("remember", {"messages": S1, "session_id": "s1"}))
        for _ in range(100):     # background curation in the server process
            st = json.loads((await c.read_resource("trimem://default/status")).contents[0].text)
            if st["curation"]["done"] == 1:
                break
            await anyio.sleep(0.2)
        out = payload(await c.call_tool("consolidate", {}))
        assert len(host.requests) == 1 and out["host_model"]["sessions"] == ["s1"]
        rec = payload(await c.call_tool("recall", {"query": "Ben's beagle", "strategy": "hybrid"}))
        assert any("6 May 2023" in i["text"] for i in rec["items"] if i["kind"] == "fact")
