"""A 768-dimension embedder (not the packaged 384-d model) through the whole product: remember over
the real MCP client, background curation of every strategy, consolidate, and recall through each
strategy. The embedder is ``TRIMEM_EMBEDDER=openai`` against a real local HTTP endpoint started
here (``tests/embed_server.py``: the one double the project allows, a remote embeddings
service).
"""

from __future__ import annotations

import json

import pytest
from mcp import Client

from helpers import WIKI_SESSIONS, payload, resource_text
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio
DIM = 768
STRATEGIES = ("plain", "hybrid", "workspace", "wiki", "auto")


async def test_a_768_d_embedder_curates_and_recalls_through_every_strategy(home, endpoint):
    srv, url = endpoint
    server = build_server(Settings(home=str(home), embedder="openai", embed_base_url=url,
                                   embed_model="wide-768", llm="none"))
    rt = server.runtime
    try:
        async with Client(server) as c:
            for sid, when, turns in WIKI_SESSIONS:
                payload(await c.call_tool("remember", {
                    "session_id": sid, "session_time": when,
                    "messages": [{"content": t, "speaker": sp, "ref": f"{sid}:{i}"}
                                 for i, (sp, t) in enumerate(turns)]}))
            assert rt.curation.wait_idle(300)
            payload(await c.call_tool("consolidate", {"min_cluster_size": 2}))
            assert rt.curation.wait_idle(300)
            status = json.loads(resource_text(await c.read_resource("trimem://default/status")))
            cur = status["curation"]
            assert (cur["failed"], cur["failed_sessions"], cur["recent_failures_in_this_process"]) \
                == (0, [], []), cur
            assert cur["done"] == len(WIKI_SESSIONS)
            tables = status["tables"]
            # every strategy built its memory in tables of the 768-d model
            for kind in ("sources", "memories", "ws_threads", "wiki_snapshots",
                         "wiki_trajectories", "wiki_pages"):
                assert tables.get(f"{kind}__openai_wide_768_{DIM}", 0) > 0, (kind, tables)
            for strategy in STRATEGIES:
                out = payload(await c.call_tool("recall", {
                    "query": "Which studio does Cara take a pottery class at?",
                    "strategy": strategy, "budget_tokens": 400}))
                assert "s3:0" in {s["ref"] for s in out["sources"]}, (strategy, out["route_reason"])
                if strategy == "auto":   # every curated strategy voted
                    assert out["route_reason"].startswith("auto → fusion of "), \
                        out["route_reason"]
    finally:
        rt.close()
    assert srv.calls > 0   # the vectors came from the endpoint, not the packaged model
