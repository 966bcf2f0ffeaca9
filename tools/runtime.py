"""The objects every tool shares: the store, the embedder and the LLM, all opened lazily.

Nothing heavy happens when the server starts: LanceDB opens on the first tool call that needs
it, the embedder's weights load on the first text to embed. ``Runtime`` is built by the server
from its settings (``Config`` carries plain values, so tools never read settings themselves).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from .curation_state import CallGate
from .errors import ToolFailure
from ..providers.registry import choose_embedder, make_embedder, make_llm
from ..storage import StorageError, open_store
from ..strategies.base import Env
from ..strategies.context import NamespaceContext

if TYPE_CHECKING:
    from ..storage.curating import Turn
    from ..storage.space import Space
    from ..strategies.base import Env

log = logging.getLogger(__name__)
EMBED_BATCH = 64               # texts per embedder call (the local model cuts them by tokens again)
EMBED_BATCH_CHARS = 400_000    # characters per embedder call


@dataclass(frozen=True)
class Limits:
    """Documented input limits; anything larger gets a clear tool error and writes nothing."""

    max_messages: int = 1_000            # per remember call
    max_message_chars: int = 100_000     # per message
    max_call_chars: int = 4_000_000      # per remember call: all messages and curated texts
    max_field_chars: int = 512           # speaker, ref, session_id, namespace, ids
    max_metadata_bytes: int = 16_384     # per message, as JSON
    max_metadata_depth: int = 8
    max_query_chars: int = 4_000
    max_budget_tokens: int = 100_000
    max_curated_items: int = 2_000


@dataclass(frozen=True)
class Config:
    home: str
    embedder: str = "local"
    embed_model: str | None = None
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    llm: str = "none"
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    sampling_timeout_s: float = 120.0
    vector_index_min_rows: int = 10_000
    source_copy_max_rows: int = 200_000
    max_ram_mb: float = 1024
    curation_delay_s: float = 0.0
    curation: bool = True
    consolidate_every_sessions: int = 0
    recall_log_days: float = 30.0         # see storage.logs.RecallPolicy
    recall_log_max: int = 10_000
    recall_trace_max_bytes: int = 65_536
    lock_wait_s: float = 30.0             # see storage.locks
    lock_lease_s: float = 10.0
    limits: Limits = Limits()


_OPEN: weakref.WeakSet[Runtime] = weakref.WeakSet()
EXIT_WAIT_S = 20.0   # the longest an exiting interpreter waits for the curation in progress


@atexit.register
def _close_open_runtimes() -> None:
    """An embedding program (or a test) that exits without ``Runtime.close()``: stop curation
    and let the session in progress finish before Python finalizes. A daemon thread still inside
    LanceDB's or onnxruntime's native code then aborts the process ("FATAL: exception not
    rethrown"). ``storage.db``'s own exit hook waits only for storage upkeep, not for curation;
    the order of the two does not matter (a store closes twice harmlessly). ``trimem serve``
    closes its runtime itself (``server/lifecycle.py``), so this finds nothing open there."""
    for rt in list(_OPEN):
        try:
            rt.close(EXIT_WAIT_S)
        except Exception:  # noqa: BLE001 - exiting anyway: say why in the log only
            log.exception("closing a runtime at exit failed")


class Runtime:
    def __init__(self, config: Config):
        self.config = config
        self.limits = config.limits
        self._lock = threading.RLock()
        self._store = None
        self._embedder = None
        self._embedder_choice = None
        self._llm = None
        self._ctx_lock = threading.Lock()   # not _lock: that one is held while the store opens
        self._contexts: dict = {}           # namespace -> strategies.context.NamespaceContext
        from .curation import CurationWorker  # lazy: cycle with tools.curation (via tools.recall)

        self.recalls = CallGate()   # recall holds it; curation waits for it to clear
        self.writes = CallGate()    # remember holds it; curation waits for writes to pause
        self.curation = CurationWorker(self, delay_s=config.curation_delay_s,
                                       consolidate_every=config.consolidate_every_sessions)
        _OPEN.add(self)

    @property
    def store(self):
        with self._lock:
            if self._store is None:
                try:
                    self._store = open_store(self.config.home,
                                             vector_index_min_rows=self.config.vector_index_min_rows,
                                             source_copy_max_rows=self.config.source_copy_max_rows,
                                             max_ram_mb=self.config.max_ram_mb,
                                             lock_wait_s=self.config.lock_wait_s,
                                             lock_lease_s=self.config.lock_lease_s)
                except (StorageError, OSError) as exc:
                    raise ToolFailure(f"cannot open the memory store at {self.config.home}: {exc}. "
                                    "Set TRIMEM_HOME to a writable folder.") from exc
                if self.config.curation:   # TRIMEM_CURATION=false: raw sources only, no resume
                    self.curation.resume(self._store)
            return self._store

    @property
    def embedder_choice(self):
        """Which embedder runs (``providers.registry.EmbedderChoice``), decided once, cheaply
        (nothing loads). When the one asked for cannot run here, says so on the log (stderr)."""
        with self._lock:
            if self._embedder_choice is None:
                try:
                    choice = choose_embedder(self.config.embedder)
                except ValueError as exc:
                    raise ToolFailure(f"embedder settings: {exc}") from exc
                if choice.reason:
                    log.warning("TRIMEM_EMBEDDER=%s cannot run here: %s", choice.requested,
                                choice.reason)
                self._embedder_choice = choice
            return self._embedder_choice

    @property
    def embedder(self):
        with self._lock:
            if self._embedder is None:
                c = self.config
                try:
                    self._embedder = make_embedder(self.embedder_choice.running, model=c.embed_model,
                                                   base_url=c.embed_base_url,
                                                   api_key=c.embed_api_key)
                except ValueError as exc:
                    raise ToolFailure(f"embedder settings: {exc}") from exc
            return self._embedder

    @property
    def llm(self):
        with self._lock:
            if self._llm is None:
                c = self.config
                try:
                    self._llm = make_llm(c.llm, model=c.llm_model, base_url=c.llm_base_url,
                                         api_key=c.llm_api_key)
                except ValueError as exc:
                    raise ToolFailure(f"LLM settings: {exc}") from exc
            return self._llm

    def embed(self, texts: list[str], progress=None):
        """Embed in bounded batches (EMBED_BATCH texts, EMBED_BATCH_CHARS characters at most), so
        that one large call never holds every text's tokens at once. ``progress(done, total,
        message)``, if given, hears after each batch of a call that needs more than one."""
        import numpy as np  # lazy: numpy, not at start-up

        from ..providers.base import ProviderError  # lazy: numpy (providers.base), not at start-up

        texts = list(texts)
        if len(texts) <= 1:
            batches = [texts]
        else:
            batches, start, chars = [], 0, 0
            for i, t in enumerate(texts):
                if i > start and (i - start >= EMBED_BATCH or chars + len(t) > EMBED_BATCH_CHARS):
                    batches.append(texts[start:i])
                    start, chars = i, 0
                chars += len(t)
            batches.append(texts[start:])
        parts, done = [], 0
        try:
            for b in batches:
                parts.append(self.embedder.embed(b))
                done += len(b)
                if progress is not None and len(batches) > 1:
                    progress(done, len(texts), "embedding")
        except ProviderError as exc:
            raise ToolFailure(f"embedding failed: {exc}") from exc
        return parts[0] if len(parts) == 1 else np.concatenate([np.asarray(p) for p in parts])

    def embed_query(self, text: str):
        from ..providers.base import ProviderError  # lazy: numpy (providers.base), not at start-up

        try:
            return self.embedder.embed_query(text)
        except ProviderError as exc:
            raise ToolFailure(f"embedding failed: {exc}") from exc

    def embed_queries(self, texts: list[str]):
        from ..providers.base import ProviderError  # lazy: numpy (providers.base), not at start-up

        try:
            return self.embedder.embed_queries(texts)
        except ProviderError as exc:
            raise ToolFailure(f"embedding failed: {exc}") from exc

    def context(self, namespace: str):
        """What this process keeps for ``namespace`` (``strategies.context``): made on first
        use, closed by :meth:`close`."""
        with self._ctx_lock:
            ctx = self._contexts.get(namespace)
            if ctx is None:
                ctx = self._contexts[namespace] = NamespaceContext(namespace)
            return ctx

    def namespace_lock(self, namespace: str) -> threading.RLock:
        """Held by curation of a namespace and by forget in it (``NamespaceContext.lock``)."""
        return self.context(namespace).lock

    @contextmanager
    def curating(self, namespace: str, wait_s: float | None = None,
                 writes: bool = True, fair: bool = False) -> Iterator[Turn]:
        """Held while a namespace's derived memory is curated (a session's step, consolidation,
        the host model's curation): the namespace's lock in this process, then its curation
        turn across processes (``storage/curating.py``; at most ``wait_s``, default the lock
        wait, else ``LockBusy``). When another process curated the namespace since this one
        last did, this process's caches and table handles of it are dropped first, so what
        the curation reads includes the other's writes. ``writes`` False: a dry run. ``fair``:
        the worker's try, which lets another process waiting for the turn go first."""
        from .recall import catch_up  # lazy: cycle with tools.recall

        turns = self.store.curations
        with self.namespace_lock(namespace), turns.turn(namespace, wait_s, writes, fair) as turn:
            if turn.moved:
                env = self.env(namespace)
                catch_up(env)       # a forget there first (drops the handles: read afresh)
                env.ns.invalidate()   # the strategies' caches (their row counts miss rewrites)
                # the tables' handles to the newest versions; periodic consolidation's count
                self.store.see_latest(f"ns_{env.space.key}__")
                self.store.see_latest("_meta")
            yield turn

    def space(self, namespace: str) -> Space:
        """The namespace's storage, bound to the current embedding model."""
        sp = self.store.space(namespace)   # one per namespace (``Store.space``)
        self.context(namespace).space = sp
        emb = self.embedder
        if getattr(emb, "dim", None) is None:   # remote embedders learn their size on first use
            self.embed(["dimension probe"])
        sp.bind_model(emb.name, emb.dim, self.embed)
        return sp

    def close(self, timeout: float = 30.0) -> bool:
        """Before the process exits: stop curation, close every namespace's context (its pool
        shut down, its caches dropped), let storage upkeep finish."""
        _OPEN.discard(self)
        end = time.monotonic() + timeout
        ok = self.curation.stop(timeout)
        with self._ctx_lock:
            contexts, self._contexts = list(self._contexts.values()), {}
        for ctx in contexts:
            ctx.close()
        # the store may be opening in another thread (start-up resume): wait for it, bounded
        if not self._lock.acquire(timeout=max(0.0, end - time.monotonic())):
            return False
        try:
            store = self._store
        finally:
            self._lock.release()
        if store is not None:
            ok = store.close(max(0.0, end - time.monotonic())) and ok
        return ok

    def env(self, namespace: str) -> Env[Space]:
        # sampling / auto: no model in the background (the host's is asked inside consolidate)
        llm = self.llm if self.config.llm == "openai" else None
        return Env(space=self.space(namespace), ns=self.context(namespace),
                   embed_query=self.embed_query, embed_queries=self.embed_queries,
                   embed=self.embed, llm=llm,
                   asymmetric=bool(getattr(self.embedder, "asymmetric", False)))
