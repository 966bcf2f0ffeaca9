"""Thread heads written by the configured LLM (a real local HTTP server speaking the OpenAI chat
API): each topic thread's head is the model's sentence and its vector moves with it, the fixed
scheme keeps its extractive heads, and the snapshot curation patches holds what was stored."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import payload
from local_http import JSONHandler, serving
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies.workspace import cache, store

pytestmark = pytest.mark.anyio

HEAD = "Ana and Bo talked about a trip to Lisbon."


class Handler(JSONHandler):
    def do_POST(self):  # noqa: N802
        body = self.body()
        summarise = body["messages"][0]["content"].startswith("Summarise this excerpt")
        text = HEAD if summarise else json.dumps({})   # other strategies' requests: nothing
        self._send(200, {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                         "choices": [{"index": 0, "finish_reason": "stop", "message": {
                             "role": "assistant", "content": text}}]})


async def test_topic_heads_are_the_models_and_the_patched_snapshot_holds_them(home):
    from mcp import Client

    with serving(Handler) as srv:
        url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        server = build_server(Settings(home=str(home), llm="openai", llm_base_url=url,
                                       llm_model="fake"))
        rt = server.runtime
        async with Client(server) as c:
            texts = ["I just got back from Lisbon.", "Did you ride the tram?",
                     "Yes, the tram 28 up the hill.", "Lisbon sounds lovely."]
            first = [{"content": t, "speaker": "Ana" if i % 2 == 0 else "Bo", "ref": f"a{i}"}
                     for i, t in enumerate(texts)]
            payload(await c.call_tool("remember", {"messages": first, "session_id": "s1"}))
            assert rt.curation.wait_idle(60)
            space = rt.space("default")
            snaps = cache.of(rt.context("default"))
            cache.snapshot(snaps, space)                 # cached: the next curation patches it
            more = [{"content": "Carla planned the whole Lisbon trip.", "speaker": "Ana",
                     "ref": "b0"}]
            payload(await c.call_tool("remember", {"messages": more, "session_id": "s2"}))
            assert rt.curation.wait_idle(60)
    threads = store.threads(space)
    topic = [t for t in threads if t.scheme == "topic"]
    assert topic and all(t.head == HEAD and t.head_by == "llm" for t in topic)
    assert all(t.head_by == "extractive" for t in threads if t.scheme == "fixed")
    assert all(abs(np.linalg.norm(np.asarray(t.vector)) - 1.0) < 1e-4 for t in topic)
    patched = cache.snapshot(snaps, space)
    assert {t.id: (t.head, t.head_by) for t in patched.threads.values()} == \
        {t.id: (t.head, t.head_by) for t in threads}
