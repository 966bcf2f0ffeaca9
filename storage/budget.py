"""One RAM budget per store for what trimem keeps resident to answer faster, shared by every
namespace the process has open (``TRIMEM_MAX_RAM_MB``).

What it covers, and how the budget is split:

* LanceDB's own caches (its ``Session``): the index cache (vector and full-text index pages,
  ``INDEX_SHARE`` of the budget) and the metadata cache (manifests, fragment and deletion
  metadata of the versions read, ``METADATA_SHARE``). LanceDB's defaults are 6 GiB and 1 GiB;
  every write makes a new version and every index rebuild new index files, and nothing
  evicted the old ones' entries below those limits, so the caches grew with the store's write
  history (hundreds of MB after a few thousand turns curated). Past their bound LanceDB evicts
  its least recently used entries and reads them again from disk when needed.
* The in-process copies of tables (``storage/snapshot.py``: the sources' copy and the derived
  tables' copies): the rest, shared by :class:`CopyBudget`. A copy is charged what it holds
  (vectors, rows, the arrays made from them: ``snapshot.State.nbytes``); when the copies
  together would pass the bound, the least recently used other copies are dropped; a copy that
  alone would pass it is not kept, and LanceDB answers its reads (its vector and full-text
  indexes, or a scan), with the same results.

Not covered: the embedding model and the libraries (about 450 MB resident after the first
embedding, whatever the store holds) and what one call materialises while it runs.

Written by hand: a few counters and an LRU order under one lock; no library keeps a byte budget
across objects that each decide what to drop.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any, Protocol

from .lance import lancedb   # imported with the validators deferred (lance.py)

# 1024: at 20,000 turns a namespace's copies (sources, workspace's graph, wiki's turn maps) did
# not fit 60 % of 256 MB together, and each recall read again what the one before had dropped:
# auto p50 852 ms against 159 ms with 1024 (bench/README.md, "Resident memory")
DEFAULT_MB = 1024
# LanceDB's two caches: at 20,000 turns, settled, every strategy's recalls used 30-40 MB of them
# together; what they held beyond that (200 MB after the curation of those turns, against 30 % +
# 10 % of 1024 MB) was entries of versions and index files that every write made stale. 8 % + 3 %
# of 1024 MB is three times the working set there; with it (and with 61 + 20 MB) the same
# recalls' p50 stayed within their run-to-run spread: auto 126-139 ms against 109-142 ms with
# 30 % + 10 % (bench/README.md, "Resident memory")
INDEX_SHARE = 0.08     # LanceDB's index cache
METADATA_SHARE = 0.03  # LanceDB's metadata cache (the rest: the in-process copies)
MB = 2 ** 20
SAMPLE = 32   # values measured to estimate the bytes of them all


class Droppable(Protocol):
    def drop(self) -> None: ...


class CopyBudget:
    """Bytes held by in-process copies, at most ``limit``; least recently used dropped first."""

    def __init__(self, limit: int):
        self.limit = max(0, int(limit))
        self._held: OrderedDict[int, tuple[Droppable, int]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        with self._lock:
            return sum(n for _, n in self._held.values())

    def admit(self, copy: Droppable, nbytes: int) -> bool:
        """Charge ``copy`` for ``nbytes`` (replacing what it was charged), dropping the least
        recently used other copies as needed; False (nothing charged) when it cannot fit even
        alone: the caller must then not keep what it loaded."""
        if nbytes > self.limit:
            self.release(copy)
            return False
        drop = []
        with self._lock:
            self._held.pop(id(copy), None)
            total = sum(n for _, n in self._held.values())
            while total + nbytes > self.limit and self._held:
                _, (other, n) = self._held.popitem(last=False)
                total -= n
                drop.append(other)
            self._held[id(copy)] = (copy, nbytes)
        for other in drop:   # outside the lock: a copy takes its own lock to drop its state
            other.drop()
        return True

    def charges(self) -> list[tuple[Droppable, int]]:
        """Each copy held and what it is charged, least recently used first."""
        with self._lock:
            return list(self._held.values())

    def fits(self, nbytes: int) -> bool:
        return nbytes <= self.limit

    def used_now(self, copy: Droppable) -> None:
        """``copy`` answered a read: it goes last in the eviction order."""
        with self._lock:
            if id(copy) in self._held:
                self._held.move_to_end(id(copy))

    def release(self, copy: Droppable) -> None:
        with self._lock:
            self._held.pop(id(copy), None)


ENTRY_BYTES = 100   # one entry of a dict of short strings: its slot, key and value strings


def sample_bytes(values: list) -> int:
    """Bytes of ``values`` (dicts, lists, tuples, slotted rows, strings, numbers) estimated from up to
    ``SAMPLE`` of them spread over the list: each one's size, and its items' one level down;
    an object the sample holds more than once (a value rows share: ``snapshot.shared_values``)
    is counted once there, and so once per ``len(values) / SAMPLE`` values in the estimate: on
    the high side for a value shared more widely."""
    if not values:
        return 0
    step = max(1, len(values) // SAMPLE)
    sample = values[::step][:SAMPLE]
    seen: set[int] = set()

    def size(x) -> int:
        if id(x) in seen:
            return 0
        seen.add(id(x))
        return sys.getsizeof(x)

    total = 0
    for v in sample:
        total += size(v)
        for x in _items(v):
            total += size(x)
            total += sum(size(y) for y in _items(x))
    return total * len(values) // len(sample)


def _items(v) -> Iterable:
    """What ``v`` holds one level down: a dict's values, a list's or tuple's items, a slotted
    object's attributes (a ``Source`` row)."""
    if isinstance(v, dict):
        return v.values()
    if isinstance(v, (list, tuple)):
        return v
    return [getattr(v, k) for k in getattr(type(v), "__slots__", ()) if hasattr(v, k)]


class RamBudget:
    """The store's budget: LanceDB's session (its two caches) and the copies' share."""

    def __init__(self, max_ram_mb: float = DEFAULT_MB):
        self.total = max(0, int(max_ram_mb * MB))
        self.index_cache = int(self.total * INDEX_SHARE)
        self.metadata_cache = int(self.total * METADATA_SHARE)
        self.copies = CopyBudget(self.total - self.index_cache - self.metadata_cache)

        self.session: Any = None   # LanceDB's, made by ``lance_session``

    def lance_session(self) -> Any:
        """The LanceDB session (its caches, bounded) for the store's connection."""
        if self.session is None:
            self.session = lancedb.Session(index_cache_size_bytes=self.index_cache,
                                           metadata_cache_size_bytes=self.metadata_cache)
        return self.session

    def lance_bytes(self) -> int:
        """What LanceDB's two caches hold now."""
        return 0 if self.session is None else int(self.session.size_bytes)
