"""Shared fixtures: a real LanceDB store in a temp folder and the real server, in memory."""

from __future__ import annotations

import threading

import pytest

from embed_server import endpoint  # noqa: F401  (a fixture: a local embeddings endpoint)
from trimem.server.app import build_server
from trimem.server.settings import Settings


@pytest.fixture
def anyio_backend():
    """Async tests use anyio's plugin (``pytestmark = pytest.mark.anyio``): unlike
    pytest-asyncio it runs a fixture's setup and teardown in one task, as the MCP client needs."""
    return "asyncio"


_MODELS: dict[tuple, dict] = {}   # (model file, tokenizer file, threads) -> loaded state
_MODELS_LOCK = threading.Lock()


@pytest.fixture(autouse=True)
def one_model_load_per_process(request, monkeypatch):
    """The packaged model loads once per test process, not once per server: every
    ``LocalEmbedder`` after the first gets the same real tokenizer and onnxruntime session (both
    thread-safe), as one long-running server's embedder serves all its calls. That saves ~0.5 s
    per server built (seconds under load). The first load per model file and thread count is the
    real one (sha256 checks included); a test that swaps the file spec loads for real again.
    Tests marked ``own_model_load`` (those of loading itself) get the product's own ``load``."""
    if request.node.get_closest_marker("own_model_load"):
        return
    from trimem.providers import local

    original = local.LocalEmbedder.load

    def load(self):
        if self.loaded:
            return self
        key = (local.MINILM_INT8_ONNX, local.BERT_UNCASED_VOCAB, vars(self).get("_threads"))
        with _MODELS_LOCK:
            if not self.loaded and key in _MODELS:
                vars(self).update(_MODELS[key])
            if not self.loaded:
                before = dict(vars(self))
                original(self)
                _MODELS[key] = {k: v for k, v in vars(self).items()
                                if before.get(k, _MODELS_LOCK) is not v}
        return self

    monkeypatch.setattr(local.LocalEmbedder, "load", load)


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def server(home, tmp_path_factory):
    return build_server(Settings(home=str(home)))


@pytest.fixture
async def client(server):
    from mcp import Client

    async with Client(server) as c:
        yield c
