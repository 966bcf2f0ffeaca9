"""The host's own model through MCP sampling, answered by a real ``mcp.Client``'s
``sampling_callback`` (scripted: a deterministic curator, garbage, a refusal, a host that never
answers). Both protocol versions: 2026-07-28 (the Sample travels in an InputRequiredResult) and
2025-11-25 (a back-channel request, time-bounded). Nothing is lost when the host fails."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CreateMessageResult, TextContent

from helpers import payload, resource_text, session, text_of
from sampling_host import Host
from trimem.server.app import build_server
from trimem.server.settings import Settings

if TYPE_CHECKING:
    from trimem.storage.rows import Memory
    from trimem.storage.space import Space

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
    rows = space.memories.of_kind("fact") + space.memories.of_kind("episode")
    assert rows and {r.origin for r in rows} == {"heuristic"}
    return space


def _rows(space: Space) -> list[Memory]:
    return space.memories.of_kind("fact") + space.memories.of_kind("episode")


ASK = {"auto": {"use_my_model": True}, "legacy": {}}   # 2026-07-28 asks only when told to


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_consolidate_curates_through_the_hosts_model(home, mode):
    server, host = make(home), Host("good")
    async with Client(server, mode=mode, sampling_callback=host) as c:
        space = await _remember(server, c)
        res = await c.call_tool("consolidate", ASK[mode])
        out = payload(res)
        (req,) = host.requests
        assert "Temporal precision" in req.system_prompt and "HostOut" in req.system_prompt
        assert '"speaker": "Ben", "text": "I adopted a beagle' in req.messages[0].content.text
        assert out["host_model"]["used"] and out["host_model"]["sessions"] == ["s1"]
        assert "scripted-model" in text_of(res)
        rows = _rows(space)
        assert {r.origin for r in rows} == {"sampled"}
        assert {r.body["written_by"] for r in rows} == {"sampling:scripted-model"}
        ben = next(r for r in rows if r.kind == "fact" and r.body["subject"] == "Ben")
        assert ben.refs == ["m1"] and "6 May 2023" in ben.text
        ana = next(r for r in rows if r.kind == "fact" and r.body["subject"] == "Ana")
        assert ana.refs == ["m1", "m2", "m3"]        # an invented label cites the session
        exp = payload(await c.call_tool("explain", {"id": ben.id}))
        assert "written by sampling:scripted-model" in exp["summary"]
        assert len(space.sources.by_session("s1")) == 3
        # the session is not asked about again, and background curation keeps the host's rows
        out = payload(await c.call_tool("consolidate", ASK[mode]))
        assert len(host.requests) == 1 and not out["host_model"]["used"]
        server.runtime.curation.curate_now("default", "s1")
        assert {r.origin for r in _rows(space)} == {"sampled"}


def _claims(space):
    return sorted((c["text"], c["subject"], c["slot"], c["ref"])
                  for c in space.derived.rows("wiki_claims", columns=["text", "subject", "slot", "ref"]))


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_hosts_model_writes_the_wikis_claims(home, mode):
    server, host = make(home), Host("good")
    async with Client(server, mode=mode, sampling_callback=host) as c:
        space = await _remember(server, c)
        heuristic = _claims(space)
        assert ("Biscuit sleeps on my bed every night.", "Ben", "", "m2") in heuristic
        out = payload(await c.call_tool("consolidate", ASK[mode]))
        assert "CLAIMS." in host.requests[0].system_prompt and "ClaimOut" in host.requests[0].system_prompt
        assert out["host_model"]["wiki_claims"] == {"s1": 2}
        # the two valid claims replace the sentence claims of their exchanges; the claim citing
        # a turn that was not shown is dropped; "state" gives the slot the wiki revises on
        assert _claims(space) == [("Ana lives in Lisbon.", "Ana", "ana|residence", "m3"),
                                  ("Ben adopted a beagle named Biscuit on 6 May 2023.", "Ben", "", "m1")]
        cid = next(r["id"] for r in space.derived.rows("wiki_claims", columns=["id", "subject"])
                   if r["subject"] == "Ana")
        exp = payload(await c.call_tool("explain", {"id": cid}))
        assert "written by sampling:scripted-model" in exp["summary"]
        rec = payload(await c.call_tool("recall", {"query": "Where does Ana live?", "strategy": "wiki"}))
        assert "m3" in {s["ref"] for s in rec["sources"]}
        assert len(space.sources.by_session("s1")) == 3


async def test_an_answer_at_the_schemas_bounds_stores_what_the_sessions_size_allows(home):
    """A host model answering a 3-turn session with every list as long as the schema allows
    (100 episodes, 400 tuples, 600 claims) gets the first of each stored, as many as the
    documented rule allows for 3 short turns (strategies/model_bounds.py): 3 episodes, 12
    facts, 4 claims per turn; the rest is dropped and reported."""
    server, host = make(home), Host("flood")
    async with Client(server, mode="legacy", sampling_callback=host) as c:
        space = await _remember(server, c)
        t0 = time.monotonic()
        out = payload(await c.call_tool("consolidate", {}))
        took = time.monotonic() - t0
    used = out["host_model"]
    rows = _rows(space)
    episodes = sorted(r.body["title"] for r in rows if r.kind == "episode")
    facts = [r for r in rows if r.kind == "fact"]
    claims = space.derived.rows("wiki_claims", columns=["text", "ref"])
    per_turn = {ref: sum(c["ref"] == ref for c in claims) for ref in ("m1", "m2", "m3")}
    print(f"flooded answer: {len(episodes)} episodes, {len(facts)} facts, {len(claims)} claims "
          f"stored ({per_turn}), {used.get('dropped')} dropped, consolidate took {took:.1f} s")
    assert used["used"] and used["sessions"] == ["s1"]
    assert episodes == ["Event 0", "Event 1", "Event 2"]   # the answer's first three
    assert len(facts) == 12 and {f.body["subject"] for f in facts} == {
        f"Person {k}" for k in range(12)}                     # the answer's first twelve
    assert per_turn == {"m1": 4, "m2": 4, "m3": 4} and used["wiki_claims"] == {"s1": 12}
    assert used["dropped"] == (100 - 3) + (400 - 12) + (600 - 12)


async def test_claims_fall_back_per_exchange_and_per_session(home):
    """An exchange the answer gives no valid claim for keeps its sentence claims; a session with
    no valid claim keeps all of them (while its episodes and facts are still the host's)."""
    class Partial(Host):
        def __init__(self, turns):
            super().__init__("good")
            self.turns = turns

        async def __call__(self, context, params):
            import json as js

            res = await super().__call__(context, params)
            assert isinstance(res, CreateMessageResult) and isinstance(res.content, TextContent)
            got = js.loads(res.content.text)
            for sess in got["sessions"]:
                sess["claims"] = [c for c in sess["claims"] if c["turn"].endswith(self.turns)]
            res.content.text = js.dumps(got)
            return res

    for turns, want in ((("t1",), 1), (("t9",), 0)):
        server, host = make(home / "-".join(turns)), Partial(turns)
        async with Client(server, mode="legacy", sampling_callback=host) as c:
            space = await _remember(server, c)
            heuristic = _claims(space)
            out = payload(await c.call_tool("consolidate", {}))
            assert out["host_model"]["sessions"] == ["s1"]
            assert out["host_model"]["wiki_claims"] == ({"s1": want} if want else {})
            claims = _claims(space)
            if want:   # exchange 1 (t1) is the host's; exchange 2 (t2, t3) keeps its sentences
                assert ("Ben adopted a beagle named Biscuit on 6 May 2023.", "Ben", "", "m1") in claims
                assert [c for c in claims if c[3] != "m1"] == [c for c in heuristic if c[3] != "m1"]
            else:
                assert claims == heuristic


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_garbage_keeps_the_heuristics(home, mode):
    server, host = make(home), Host("garbage")
    async with Client(server, mode=mode, sampling_callback=host) as c:
        space = await _remember(server, c)
        before = sorted(r.id for r in _rows(space))
        claims = _claims(space)
        res = await c.call_tool("consolidate", ASK[mode])
        out = payload(res)
        assert host.requests and not out["host_model"]["used"]
        assert "answer rejected" in out["host_model"]["why"]
        assert "Your model was not used (answer rejected" in text_of(res)
        assert sorted(r.id for r in _rows(space)) == before
        assert _claims(space) == claims
        assert len(space.sources.by_session("s1")) == 3


async def test_malformed_items_are_dropped_one_by_one(home):
    """Valid JSON of the right shape whose items name nothing that was shown, or are empty:
    nothing is written, the heuristics stay, the call succeeds."""
    class Odd(Host):
        async def __call__(self, context, params):
            import json as js

            res = await super().__call__(context, params)
            assert isinstance(res, CreateMessageResult) and isinstance(res.content, TextContent)
            got = js.loads(res.content.text)
            for sess in got["sessions"]:
                sess["session"] = "S00000000"                      # a session not shown
            res.content.text = js.dumps(got)
            return res

    server, host = make(home), Odd("good")
    async with Client(server, mode="legacy", sampling_callback=host) as c:
        space = await _remember(server, c)
        before, claims = sorted(r.id for r in _rows(space)), _claims(space)
        out = payload(await c.call_tool("consolidate", {}))
        assert out["host_model"]["why"] == "the answer named nothing that was asked"
        assert sorted(r.id for r in _rows(space)) == before and _claims(space) == claims


async def test_a_refusal_over_the_back_channel_is_not_an_error(home):
    server, host = make(home), Host("refuse")
    async with Client(server, mode="legacy", sampling_callback=host) as c:
        space = await _remember(server, c)
        out = payload(await c.call_tool("consolidate", {}))
        assert host.requests and "declined" in out["host_model"]["why"]
        assert {r.origin for r in _rows(space)} == {"heuristic"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_refusing_host_gets_a_queued_session_curated_by_heuristics(home, mode):
    """A session still queued when consolidate runs (curation waits 60 s here) is curated by
    the heuristics in the call when the host declines; the call succeeds and says so."""
    server, host = make(home, curation_delay_s=60), Host("refuse")
    async with Client(server, mode=mode, sampling_callback=host) as c:
        payload(await c.call_tool("remember", {"messages": S1, "session_id": "s1",
                                               "session_time": "2023-05-08T10:00:00"}))
        space = server.runtime.space("default")
        assert not _rows(space) and session(space, "s1").curation == "queued"
        res = await c.call_tool("consolidate", {})
        out = payload(res)
        assert out["host_model"]["curated_by_heuristics"] == ["s1"]
        assert "1 queued session(s) were curated by heuristics" in text_of(res)
        if mode == "legacy":
            assert host.requests and "declined" in out["host_model"]["why"]
        else:    # not asked by default: there a refusal would end the call
            assert not host.requests and "use_my_model=true" in out["host_model"]["why"]
        assert {r.origin for r in _rows(space)} == {"heuristic"}
        assert session(space, "s1").curation == "done" and _claims(space)
        rec = payload(await c.call_tool("recall", {"query": "Ben's dog", "strategy": "hybrid"}))
        assert "m1" in {s["ref"] for s in rec["sources"]}


async def test_a_refusal_on_the_stateless_protocol_loses_nothing(home):
    """On 2026-07-28 the client itself ends the call when its callback refuses (the server
    never hears of it), so the host's model is asked only when the caller says so
    (use_my_model=true); the session keeps its heuristic memories and sources either way."""
    server, host = make(home), Host("refuse")
    async with Client(server, sampling_callback=host) as c:
        space = await _remember(server, c)
        res = await c.call_tool("consolidate", {})
        assert not host.requests and "use_my_model=true" in payload(res)["host_model"]["why"]
        assert "Your model was not used" in text_of(res)
        with pytest.raises(MCPError, match="rejected"):
            await c.call_tool("consolidate", {"use_my_model": True})
        assert {r.origin for r in _rows(space)} == {"heuristic"}
        assert len(space.sources.by_session("s1")) == 3
        rec = payload(await c.call_tool("recall", {"query": "Ben's dog", "strategy": "hybrid"}))
        assert "m1" in {s["ref"] for s in rec["sources"]}


async def test_a_host_that_never_answers_is_timed_out(home):
    """TRIMEM_SAMPLING_TIMEOUT_S bounds the wait (the host would answer after 60 s): the call
    returns within the bound plus the consolidation's own time, and nothing is lost."""
    server, host = make(home, sampling_timeout_s=1.5), Host("hang", hang_s=60)
    async with Client(server, mode="legacy", sampling_callback=host) as c:
        space = await _remember(server, c)
        before, claims = sorted(r.id for r in _rows(space)), _claims(space)
        plain = time.perf_counter()
        payload(await c.call_tool("consolidate", {"use_my_model": False}))
        plain = time.perf_counter() - plain
        t0 = time.perf_counter()
        out = payload(await c.call_tool("consolidate", {}))
        took = time.perf_counter() - t0
        assert len(host.requests) == 1 and took < 1.5 + plain + 5
        assert "did not answer within 1.5 s" in out["host_model"]["why"]
        assert sorted(r.id for r in _rows(space)) == before and _claims(space) == claims
        assert len(space.sources.by_session("s1")) == 3


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_no_request_without_capability_or_permission(home, mode):
    server = make(home)
    async with Client(server, mode=mode) as c:               # no sampling capability
        await _remember(server, c)
        out = payload(await c.call_tool("consolidate", {}))
        assert out["host_model"] == {"used": False, "why": "the client does not offer sampling"}
    host = Host("good")
    async with Client(make(home, llm="none"), mode=mode, sampling_callback=host) as c:
        out = payload(await c.call_tool("consolidate", {"use_my_model": True}))
        assert not host.requests and out["host_model"]["why"] == "TRIMEM_LLM=none"
        out = payload(await c.call_tool("consolidate", {"use_my_model": False}))
        assert not host.requests


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
            st = json.loads(resource_text(await c.read_resource("trimem://default/status")))
            if st["curation"]["done"] == 1:
                break
            await anyio.sleep(0.2)
        out = payload(await c.call_tool("consolidate", ASK[mode]))
        assert len(host.requests) == 1 and out["host_model"]["sessions"] == ["s1"]
        rec = payload(await c.call_tool("recall", {"query": "Ben's beagle", "strategy": "hybrid"}))
        assert any("6 May 2023" in i["text"] for i in rec["items"] if i["kind"] == "fact")
