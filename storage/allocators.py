"""Memory the allocators hold for the process after it was freed: given back to the system.

Measured with ``bench/scale.py`` (auto, curation on), most of the process's growth with the
store was neither Python objects (tracemalloc: 45 MB at 2,000 turns) nor what LanceDB's caches
or the copies hold, but freed memory the allocators kept:

* pyarrow's default pool (mimalloc in the Linux wheels) reserves 1 GiB regions and kept the
  pages of every table a read or a curation materialised (326 MB resident in its region at
  2,000 turns, while Arrow's own count of live bytes was 6 MB). :func:`settle` makes the system
  allocator pyarrow's pool: freed buffers go back to malloc.
* glibc maps a block of 128 KiB or more on its own and unmaps it when freed, but each time
  such a block is freed it raises that threshold to the block's size (up to 32 MiB on 64-bit
  systems; ``mallopt(3)``, M_MMAP_THRESHOLD): after a few, the arrays a recall or a curated
  session makes (vector matrices, Arrow buffers, LanceDB's reads) come from the heaps and stay
  there once freed. :func:`settle` fixes it at ``MMAP_THRESHOLD`` (as
  ``MALLOC_MMAP_THRESHOLD_`` would, unless that or the glibc tunable is set).
* glibc's malloc gives each thread that allocates an arena of its own (up to eight per core):
  LanceDB's and onnxruntime's thread pools spread their short-lived buffers over a dozen
  arenas, each keeping its peak. :func:`settle` caps the arenas at ``ARENAS`` (as
  ``MALLOC_ARENA_MAX`` would, unless that is set), and :func:`trim` (``malloc_trim``) returns
  the free pages of every arena, after each curated session, and once a server has answered
  nothing for ``IDLE_TRIM_S`` (:func:`trim_when_idle`): what its recalls and writes freed.

Each is a no-op where it does not apply (another C library, another OS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading
import time
from typing import Callable

import pyarrow as pa

log = logging.getLogger(__name__)

ARENAS = 2
# Blocks this large or larger are mapped on their own and unmapped when freed (glibc's default
# starts at 128 KiB and, each time such a block is freed, raises itself up to 32 MiB, after
# which the arrays a recall or a curated session makes and frees stay in the heaps). Measured at
# 20,000 turns (bench/README.md, "Resident memory"): 800 turns stored, curated and asked after
# a settled 20,000, peak 940-943 MB with glibc's default, 839 with 1 MiB, and no slower.
MMAP_THRESHOLD = 1 << 20
M_MMAP_THRESHOLD = -3   # glibc's mallopt parameter
# A quiet server gives back what its last calls freed this long after them. Measured at 20,000
# turns (bench/README.md, "Resident memory"): 60 recalls of a strategy left 18-62 MB that a trim
# returned, in 2-6 ms; in the process that had also curated the store, 95 MB.
IDLE_TRIM_S = 2.0
M_ARENA_MAX = -8   # glibc's mallopt parameter
_LIBC: list = []
_SETTLED = threading.Event()


def _glibc():
    if not _LIBC:
        lib = None
        if sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            except OSError:
                lib = None
            # only glibc has both (musl has neither malloc_trim nor M_ARENA_MAX)
            if lib is not None and not (hasattr(lib, "malloc_trim") and hasattr(lib, "mallopt")):
                lib = None
        _LIBC.append(lib)
    return _LIBC[0]


def settle() -> None:
    """Once per process: pyarrow allocates with the system allocator, glibc keeps few arenas."""
    if _SETTLED.is_set():
        return
    _SETTLED.set()
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        pa.set_memory_pool(pa.system_memory_pool())
    lib = _glibc()
    if lib is not None and "MALLOC_ARENA_MAX" not in os.environ:
        lib.mallopt(M_ARENA_MAX, ARENAS)
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if lib is not None and "MALLOC_MMAP_THRESHOLD_" not in os.environ \
            and "glibc.malloc.mmap_threshold" not in tunables:
        lib.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def trim() -> None:
    """Give the allocators' free pages back to the system (a few ms)."""
    lib = _glibc()
    if lib is not None:
        lib.malloc_trim(0)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks",
                                               "keepcost")]


def heap() -> dict[str, float] | None:
    """What glibc's malloc holds, in MB, over every arena (``mallinfo2``, glibc 2.33+): its
    allocations in use (``in_use``: numpy's and Arrow's buffers, LanceDB's and onnxruntime's
    native memory; not Python's small objects, which its own allocator maps), the free memory
    its arenas keep (``free``: what :func:`trim` can give back, less what fragmentation pins),
    and its allocations mapped on their own (``mapped``). None elsewhere. For benchmarks."""
    lib = _glibc()
    if lib is None or not hasattr(lib, "mallinfo2"):
        return None
    lib.mallinfo2.restype = _MallInfo2
    m = lib.mallinfo2()
    mb = 2 ** 20
    return {"in_use": round(m.uordblks / mb, 1), "free": round(m.fordblks / mb, 1),
            "mapped": round(m.hblkhd / mb, 1)}


class IdleTrim:
    """Calls ``fn`` once ``delay`` seconds have passed since the last :meth:`poke`: a burst of
    calls is followed by one trim, none of them waits for it. A thread runs only while a trim
    is due (a daemon: a host stopping the server does not wait for it).

    Written by hand: ``threading.Timer`` would start a thread per poke (a recall each); this is
    one deadline moved under a lock."""

    def __init__(self, fn: Callable[[], None], delay: float):
        self._fn, self.delay = fn, delay
        self._cv = threading.Condition()
        self._due: float | None = None
        self._thread: threading.Thread | None = None
        self.done = 0   # trims made (for tests and benchmarks)

    def poke(self) -> None:
        """A call just ended: trim ``delay`` seconds from now unless another call ends first."""
        with self._cv:
            self._due = time.monotonic() + self.delay
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="trimem-idle-trim",
                                                daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._due is not None and (wait := self._due - time.monotonic()) > 0:
                    self._cv.wait(wait)
                if self._due is None:   # nothing poked since the last trim: the thread ends
                    self._thread = None
                    return
                self._due = None
            if not sys.is_finalizing():
                self._fn()
            with self._cv:
                self.done += 1


IDLE = IdleTrim(trim, IDLE_TRIM_S)


def trim_when_idle() -> None:
    """Trim once no call has ended for ``IDLE_TRIM_S`` (where there is a trim to make)."""
    if _glibc() is not None:
        IDLE.poke()
