"""OpenAI-compatible providers against a real local HTTP server (no mocks of the openai library).

The fake server speaks just enough of the OpenAI API: ``POST /v1/embeddings`` answers deterministic,
deliberately un-normalised vectors derived from a hash of each text (optionally in reversed order,
relying on the ``index`` field), and ``POST /v1/chat/completions`` answers free text, or a JSON
object generated from the request's ``json_schema``. ``state.fail_next`` queues error statuses for
the next requests; other switches cover json_schema rejection and invalid JSON.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
import types
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

import numpy as np
import pytest
from pydantic import BaseModel

from local_http import JSONHandler, serving
from trimem.providers.base import LLM, Embedder, ProviderError
from trimem.providers.llm_none import NoLLM, is_none
from trimem.providers.openai_compat import OpenAIEmbedder, OpenAILLM
from trimem.providers.registry import make_embedder, make_llm

FAST = 0.01  # retry_backoff: keep retry tests fast; the policy itself is unchanged


def raw_vector(text: str, dim: int) -> list[float]:
    """Deterministic, un-normalised (norm well above 1) vector for ``text``."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 127.5) / 10.0 for i in range(dim)]


def unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64)
    return a / np.linalg.norm(a)


def example_for(schema: dict, defs: dict | None = None) -> object:
    """A fixed valid instance of a (strict) JSON schema."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return example_for(defs[schema["$ref"].split("/")[-1]], defs)
    if "anyOf" in schema:
        return example_for(schema["anyOf"][0], defs)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type", "")
    if kind == "object":
        return {k: example_for(v, defs) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [example_for(schema["items"], defs)]
    return {"string": "text", "integer": 7, "number": 0.5, "boolean": True, "null": None}[kind]


@dataclass
class FakeState:
    dim: int = 8
    requests: list[tuple[str, dict]] = field(default_factory=list)
    fail_next: list[int] = field(default_factory=list)
    reverse_order: bool = False
    reject_json_schema: bool = False
    invalid_json: bool = False
    html: bool = False  # answer 200 text/html, as a web page at the wrong URL would
    delay: float = 0.0  # seconds to sleep before answering
    json_object_answer: str = '{"keep": true, "reason": "fallback", "tags": ["a"]}'
    lock: threading.Lock = field(default_factory=threading.Lock)

    def of(self, path: str) -> list[dict]:
        return [body for p, body in self.requests if p == path]


class Handler(JSONHandler):
    state: FakeState  # set per server in the fixture

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        body = self.body()
        st = self.server.state  # type: ignore[attr-defined]
        with st.lock:
            st.requests.append((self.path, body))
            status = st.fail_next.pop(0) if st.fail_next else None
        time.sleep(st.delay)
        if st.html:
            page = b"<html>not an API</html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif status is not None:
            self._send(status, {"error": {"message": f"injected {status}", "type": "server_error"}})
        elif self.path == "/v1/embeddings":
            self._embeddings(st, body)
        elif self.path == "/v1/chat/completions":
            self._chat(st, body)
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _embeddings(self, st: FakeState, body: dict) -> None:
        rows = [{"object": "embedding", "index": i, "embedding": raw_vector(t, st.dim)}
                for i, t in enumerate(body["input"])]
        if st.reverse_order:
            rows.reverse()
        self._send(200, {"object": "list", "data": rows, "model": body["model"],
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def _chat(self, st: FakeState, body: dict) -> None:
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema" and st.reject_json_schema:
            self._send(400, {"error": {"message": "response_format json_schema is not supported",
                                       "type": "invalid_request_error"}})
            return
        if st.invalid_json:
            content = "{not json"
        elif fmt.get("type") == "json_schema":
            content = json.dumps(example_for(fmt["json_schema"]["schema"]))
        elif fmt.get("type") == "json_object":
            content = "```json\n" + st.json_object_answer + "\n```"
        else:
            content = f"echo: {body['messages'][-1]['content']}"
        self._send(200, {
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}]})


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # the timeout test hangs up before the delayed answer is written: not worth a traceback
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


@pytest.fixture
def server():
    with serving(Handler, QuietServer) as srv:
        srv.state = FakeState()  # type: ignore[attr-defined]
        srv.url = f"http://127.0.0.1:{srv.server_address[1]}/v1"  # type: ignore[attr-defined]
        yield srv


@pytest.fixture
def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens here any more


class Verdict(BaseModel):
    keep: bool
    reason: str
    tags: list[str]


# ---------------------------------------------------------------- embedder


def test_embed_shapes_normalisation_and_order(server):
    st = server.state
    st.reverse_order = True  # the client must re-order by `index`
    emb = OpenAIEmbedder(server.url, "", "fake-embed", dim=8)
    texts = ["alpha", "beta", "gamma", ""]
    out = emb.embed(texts)
    assert out.shape == (4, 8) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    for row, text in zip(out, texts):
        np.testing.assert_allclose(row, unit(raw_vector(text or " ", 8)), rtol=1e-5, atol=1e-6)
    body = st.of("/v1/embeddings")[0]
    assert body["encoding_format"] == "float" and body["model"] == "fake-embed"
    assert body["input"][3] == " "  # empty strings are sent as a space
    q = emb.embed_query("beta")
    assert q.shape == (8,) and q.dtype == np.float32
    np.testing.assert_allclose(q, out[1], rtol=1e-6)
    assert emb.name == "openai:fake-embed" and isinstance(emb, Embedder)


def test_embed_batches(server):
    emb = OpenAIEmbedder(server.url, "k", "m", dim=8, batch_size=4)
    texts = [f"text {i}" for i in range(10)]
    out = emb.embed(texts)
    assert out.shape == (10, 8)
    assert [len(b["input"]) for b in server.state.of("/v1/embeddings")] == [4, 4, 2]
    np.testing.assert_allclose(out[9], unit(raw_vector("text 9", 8)), rtol=1e-5, atol=1e-6)
    assert emb.embed([]).shape == (0, 8)
    assert len(server.state.of("/v1/embeddings")) == 3  # empty input sends nothing when dim is known
    both = emb.embed_queries(["text 1", "text 2"])        # a query and its variant: one request
    assert [len(b["input"]) for b in server.state.of("/v1/embeddings")][3:] == [2]
    np.testing.assert_allclose(both[1], emb.embed_query("text 2"), rtol=1e-6)


def test_dim_discovered_from_first_response(server):
    server.state.dim = 12
    emb = OpenAIEmbedder(server.url, None, "m")
    assert emb.embed(["x", "y"]).shape == (2, 12)
    assert emb.dim == 12
    assert len(server.state.of("/v1/embeddings")) == 1


def test_dim_probe_when_read_first(server):
    server.state.dim = 5
    emb = OpenAIEmbedder(server.url, None, "m")
    assert emb.dim == 5 and emb.dim == 5
    assert len(server.state.of("/v1/embeddings")) == 1


def test_wrong_dim_is_a_clear_error(server):
    emb = OpenAIEmbedder(server.url, None, "m", dim=16)
    with pytest.raises(ProviderError, match=r"8-dim vectors but dim=16"):
        emb.embed(["x"])


def test_retry_on_500_then_success(server):
    server.state.fail_next = [500, 429]
    emb = OpenAIEmbedder(server.url, None, "m", dim=8, retry_backoff=FAST)
    assert emb.embed(["x"]).shape == (1, 8)
    assert len(server.state.of("/v1/embeddings")) == 3


def test_gives_up_after_two_retries(server):
    server.state.fail_next = [503, 503, 503, 503]
    emb = OpenAIEmbedder(server.url, None, "m", dim=8, retry_backoff=FAST)
    with pytest.raises(ProviderError, match=r"3 attempt\(s\).*503"):
        emb.embed(["x"])
    assert len(server.state.of("/v1/embeddings")) == 3


def test_client_errors_are_not_retried(server):
    server.state.fail_next = [400]
    emb = OpenAIEmbedder(server.url, None, "m", dim=8, retry_backoff=FAST)
    with pytest.raises(ProviderError, match="400"):
        emb.embed(["x"])
    assert len(server.state.of("/v1/embeddings")) == 1


def test_wrong_path_404_mentions_v1(server):
    emb = OpenAIEmbedder(server.url.removesuffix("/v1"), None, "m", dim=8, retry_backoff=FAST)
    with pytest.raises(ProviderError, match=r"404.*/v1.*TRIMEM_EMBED_BASE_URL"):
        emb.embed(["x"])


def test_unreachable_endpoint(closed_url):
    emb = OpenAIEmbedder(closed_url, None, "m", dim=8, retry_backoff=FAST)
    t0 = time.monotonic()
    with pytest.raises(ProviderError, match=r"cannot reach embedding endpoint .*TRIMEM_EMBED_BASE_URL"):
        emb.embed(["x"])
    assert time.monotonic() - t0 < 5


def test_timeout_is_reported(server):
    server.state.delay = 0.5
    emb = OpenAIEmbedder(server.url, None, "m", dim=8, timeout=0.1, max_retries=0)
    with pytest.raises(ProviderError, match=r"timed out after 0.1s"):
        emb.embed(["x"])


def test_non_api_answer_is_a_clear_error(server):
    server.state.html = True
    with pytest.raises(ProviderError, match=r"non-JSON body.*TRIMEM_EMBED_BASE_URL"):
        OpenAIEmbedder(server.url, None, "m").embed(["x"])
    with pytest.raises(ProviderError, match=r"OpenAI-compatible.*TRIMEM_LLM_BASE_URL"):
        OpenAILLM(server.url, None, "m").structured("s", "u", Verdict)


# ---------------------------------------------------------------- LLM


def test_complete(server):
    llm = OpenAILLM(server.url, "", "fake-chat")
    assert llm.complete("be brief", "hello") == "echo: hello"
    body = server.state.of("/v1/chat/completions")[0]
    assert body["model"] == "fake-chat"
    assert body["messages"] == [{"role": "system", "content": "be brief"},
                                {"role": "user", "content": "hello"}]
    assert llm.name == "openai:fake-chat" and isinstance(llm, LLM) and not is_none(llm)


def test_structured_parses_into_model(server):
    llm = OpenAILLM(server.url, None, "m")
    out = llm.structured("judge", "keep this?", Verdict)
    assert out == Verdict(keep=True, reason="text", tags=["text"])
    fmt = server.state.of("/v1/chat/completions")[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Verdict"


def test_structured_falls_back_to_json_object(server):
    server.state.reject_json_schema = True
    llm = OpenAILLM(server.url, None, "m")
    assert llm.structured("judge", "q", Verdict) == Verdict(keep=True, reason="fallback", tags=["a"])
    assert llm.structured("judge", "q", Verdict).reason == "fallback"
    kinds = [b["response_format"]["type"] for b in server.state.of("/v1/chat/completions")]
    assert kinds == ["json_schema", "json_object", "json_object"]  # rejection is remembered
    system = server.state.of("/v1/chat/completions")[1]["messages"][0]["content"]
    assert system.startswith("judge") and '"tags"' in system  # the schema is spelled out


def test_structured_invalid_json_is_a_provider_error(server):
    server.state.invalid_json = True
    llm = OpenAILLM(server.url, None, "m")
    with pytest.raises(ProviderError, match="does not match Verdict"):
        llm.structured("s", "u", Verdict)


def test_llm_retries_500_once(server):
    server.state.fail_next = [500]
    llm = OpenAILLM(server.url, None, "m", retry_backoff=FAST)
    assert llm.structured("s", "u", Verdict).keep is True
    assert len(server.state.of("/v1/chat/completions")) == 2


def test_llm_unreachable(closed_url):
    llm = OpenAILLM(closed_url, None, "m", retry_backoff=FAST)
    with pytest.raises(ProviderError, match="cannot reach chat endpoint.*TRIMEM_LLM_BASE_URL"):
        llm.complete("s", "u")


def test_no_llm():
    llm = NoLLM()
    assert llm.name == "none" and isinstance(llm, LLM) and is_none(llm) and is_none(None)
    with pytest.raises(ProviderError, match="no LLM configured"):
        llm.complete("s", "u")
    with pytest.raises(ProviderError, match="no LLM configured.*Verdict"):
        llm.structured("s", "u", Verdict)


# ---------------------------------------------------------------- registry


def test_registry_builds_providers(server, monkeypatch, tmp_path):
    emb = make_embedder("openai", model="e", base_url=server.url, api_key=None)
    assert isinstance(emb, OpenAIEmbedder) and emb.name == "openai:e"
    assert isinstance(make_llm("None", model=None, base_url=None, api_key=None), NoLLM)
    llm = make_llm("openai", model="c", base_url=server.url, api_key="k")
    assert isinstance(llm, OpenAILLM) and llm.complete("s", "hi") == "echo: hi"

    class FakeLocal:  # stands in for the bundled-model embedder, which is not under test here
        pass

    fake = types.ModuleType("trimem.providers.local")
    monkeypatch.setattr(fake, "LocalEmbedder", FakeLocal, raising=False)
    monkeypatch.setitem(sys.modules, "trimem.providers.local", fake)
    local = make_embedder("local", model=None, base_url=None, api_key=None)
    assert isinstance(local, FakeLocal)


@pytest.mark.parametrize(("call", "pattern"), [
    (lambda: make_embedder("bert", model=None, base_url=None, api_key=None),
     r"TRIMEM_EMBEDDER='bert'.*local, e5-small, openai"),
    (lambda: make_llm("gpt", model=None, base_url=None, api_key=None),
     r"TRIMEM_LLM='gpt'.*none, openai"),
    (lambda: make_embedder("openai", model="m", base_url=None, api_key=None),
     "TRIMEM_EMBED_BASE_URL"),
    (lambda: make_embedder("openai", model="", base_url="http://x/v1", api_key=None),
     "TRIMEM_EMBED_MODEL"),
    (lambda: make_llm("openai", model="m", base_url=" ", api_key=None), "TRIMEM_LLM_BASE_URL"),
    (lambda: make_llm("openai", model=None, base_url="http://x/v1", api_key=None), "TRIMEM_LLM_MODEL"),
])
def test_registry_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_module_import_does_not_import_openai():
    import subprocess

    code = ("import sys, trimem.providers.openai_compat, trimem.providers.registry; "
            "sys.exit(1 if 'openai' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
