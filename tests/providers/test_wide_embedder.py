"""A 768-dimension embedder (not the packaged 384-d model) through the whole product: remember over
the real MCP client, background curation of every strategy, consolidate, and recall through each
strategy. The embedder is ``TRIMEM_EMBEDDER=openai`` against a real local HTTP endpoint started
here (the one double the project allows: a remote embeddings service). Its vectors are a hashed
bag of words, so turns that share words are close, deterministically.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from mcp import Client

from helpers import WIKI_SESSIONS, payload
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio
DIM = 768
STRATEGIES = ("plain", "hybrid", "workspace", "wiki", "auto")


def bag_of_words(text: str) -> list[float]:
    """Each lower-cased word adds 1 to a hashed one of ``DIM`` slots; L2-normalised."""
    v = np.zeros(DIM)
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        v[int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "big") % DIM] += 1.0
    n = np.linalg.norm(v)
    return (v / n if n else v).tolist()


class Embeddings(BaseHTTPRequestHandler):
    """Just ``POST /v1/embeddings`` of the OpenAI API."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.calls += 1  # type: ignore[attr-defined]
        if self.path != "/v1/embeddings":
            status, out = 404, {"error": {"message": f"no route {self.path}"}}
        else:
            status, out = 200, {"object": "list", "model": body["model"],
                                "data": [{"object": "embedding", "index": i,
                                          "embedding": bag_of_words(t)}
                                         for i, t in enumerate(body["input"])],
                                "usage": {"prompt_tokens": 1, "total_tokens": 1}}
        data = json.dumps(out).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def endpoint():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Embeddings)
    srv.daemon_threads = True
    srv.calls = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv, f"http://127.0.0.1:{srv.server_address[1]}/v1"
    srv.shutdown()
    srv.server_close()


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
            status = json.loads((await c.read_resource("trimem://default/status")).contents[0].text)
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
