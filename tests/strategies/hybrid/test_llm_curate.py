"""LLM curation through a real local HTTP server speaking the OpenAI chat API (no mocks): the
paper's two prompts go out as json_schema structured outputs, the answers become linked rows, and
a failing endpoint falls back to the heuristics."""

from __future__ import annotations

import json
import re
from http.server import ThreadingHTTPServer

import pytest

from helpers import payload
from local_http import JSONHandler, serving
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies.hybrid.llm_curate import EPISODIC_PROMPT, RELATIONAL_PROMPT

pytestmark = pytest.mark.anyio


class LLMServer(ThreadingHTTPServer):
    """The endpoint: what it was sent, and whether it answers 500."""

    requests: list[dict] = []
    fail = False


class Handler(JSONHandler):
    def do_POST(self):  # noqa: N802
        body = self.body()
        server = self.server
        assert isinstance(server, LLMServer)
        server.requests.append(body)
        if server.fail:
            return self._send(500, {"error": {"message": "down", "type": "server_error"}})
        fmt = (body.get("response_format") or {}).get("json_schema") or {"name": "text"}
        refs = re.findall(r"^\[([^\]]+)\]", body["messages"][-1]["content"], re.M)
        if fmt["name"] == "ClusterPlan":
            ids = re.findall(r"^\[([^\]]+)\]", body["messages"][-1]["content"], re.M)
            answer = {"operations": [
                {"op": "merge", "ids": [ids[0], "invented-id"], "into": ids[1], "why": "same fact",
                 "text": "fact numbers 0 and 1, merged by the model"},
                {"op": "supersede", "ids": [ids[1]], "into": ids[2], "why": "already used"},
                {"op": "supersede", "ids": [ids[2]], "into": ids[3], "why": "moved"}]}
        elif fmt["name"] == "EpisodesOut":
            answer = {"episodes": [{"title": "Biscuit the puppy", "summary": "Ben adopted Biscuit.",
                                    "details": "On Saturday, 6 May 2023 Ben adopted Biscuit.",
                                    "timestamp": "2023-05-06", "turn_refs": refs[:2]}]}
        elif fmt["name"] != "TuplesOut":   # another strategy's request: answer it plainly
            answer = {}
        else:
            answer = {"tuples": [
                {"subject": "Ben", "relation": "adopted", "object": "a beagle named Biscuit",
                 "timestamp": "2023-05-06", "context": "Ben told Ana", "turn_refs": [refs[1]]},
                {"subject": "Ana", "relation": "lives in", "object": "Lisbon",
                 "timestamp": "not a date", "context": "", "turn_refs": ["no-such-ref"]}]}
        self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                             "role": "assistant", "content": json.dumps(answer)}}]})


@pytest.fixture
def llm_server():
    with serving(Handler, LLMServer) as srv:
        srv.requests, srv.fail = [], False   # the instance's own, not the class defaults
        yield srv


MSGS = [{"content": "I live in Lisbon and love it.", "speaker": "Ana", "ref": "m1"},
        {"content": "I adopted a beagle named Biscuit last Saturday!", "speaker": "Ben", "ref": "m2"},
        {"content": "Biscuit sleeps on my bed every night.", "speaker": "Ben", "ref": "m3"}]


async def test_llm_curation_through_a_local_openai_server(llm_server, home, tmp_path_factory):
    from mcp import Client

    url = f"http://127.0.0.1:{llm_server.server_address[1]}/v1"
    server = build_server(Settings(home=str(home), llm="openai", llm_base_url=url,
                                   llm_model="fake"))
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"messages": MSGS, "session_id": "s",
                                               "session_time": "2023-05-08T10:00:00"}))
        assert server.runtime.curation.wait_idle(60)
        space = server.runtime.space("default")
        facts, eps = space.memories.of_kind("fact"), space.memories.of_kind("episode")
        ours = [r for r in llm_server.requests
                if r["messages"][0]["content"] in (EPISODIC_PROMPT, RELATIONAL_PROMPT)]
        assert [r["messages"][0]["content"] for r in ours] == [EPISODIC_PROMPT, RELATIONAL_PROMPT]
        assert all(r["response_format"]["type"] == "json_schema" for r in ours)
        assert "[m2] Ben: I adopted" in ours[0]["messages"][1]["content"]
        assert {m.origin for m in facts + eps} == {"llm"}
        assert {m.body["written_by"] for m in facts + eps} == {"openai:fake"}
        exp = payload(await c.call_tool("explain", {"id": eps[0].id}))
        assert "written by openai:fake" in exp["summary"]
        (ep,) = eps
        assert ep.refs == ["m1", "m2"] and ep.body["title"] == "Biscuit the puppy"
        biscuit = next(f for f in facts if f.body["subject"] == "Ben")
        assert biscuit.refs == ["m2"] and "6 May 2023" in biscuit.text
        lisbon = next(f for f in facts if f.body["subject"] == "Ana")
        assert lisbon.refs == ["m1", "m2", "m3"]    # an unknown ref falls back to the chunk
        res = payload(await c.call_tool("recall", {"query": "Ben's dog", "strategy": "hybrid"}))
        assert "m2" in {s["ref"] for s in res["sources"]}

        llm_server.fail = True                          # endpoint down: heuristics take over
        payload(await c.call_tool("remember", {"messages": MSGS[1:2], "session_id": "t"}))
        assert server.runtime.curation.wait_idle(60)
        t_rows = [m for m in space.memories.of_kind("fact") if m.session_id == "t"]
        assert t_rows and {m.origin for m in t_rows} == {"heuristic"}


def test_llm_consolidation_plan_is_checked_against_the_cluster(llm_server):
    from datetime import datetime, timezone

    from trimem.providers.openai_compat import OpenAILLM
    from trimem.storage.rows import Memory
    from trimem.strategies.hybrid.rules import CONSOLIDATION_PROMPT, llm_plan

    url = f"http://127.0.0.1:{llm_server.server_address[1]}/v1"
    when = datetime(2023, 5, 8, tzinfo=timezone.utc)
    rows = [Memory(id=f"fct_{k}", kind="fact", text=f"fact number {k}", timestamp=when)
            for k in range(4)]
    ops = llm_plan(OpenAILLM(url, None, "fake"), "fact", rows)
    assert llm_server.requests[-1]["messages"][0]["content"] == CONSOLIDATION_PROMPT
    # an invented id is dropped; a row already used by an earlier operation is not reused
    assert [(o["op"], o["ids"], o["into"]) for o in ops] == [
        ("merge", ["fct_0"], "fct_1"), ("supersede", ["fct_2"], "fct_3")]
    # the merged text is the model's, and says which model wrote it
    assert ops[0]["text"] == "fact numbers 0 and 1, merged by the model"
    assert ops[0]["text_by"] == "openai:fake" and "text" not in ops[1]
