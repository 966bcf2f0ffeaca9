"""Memory the allocators hold for the process after it was freed: given back to the system.

Measured with ``bench/scale.py`` (auto, curation on), most of the process's growth with the
store was neither Python objects (tracemalloc: 45 MB at 2,000 turns) nor what LanceDB's caches
or the copies hold, but freed memory the allocators kept:

* pyarrow's default pool (mimalloc in the Linux wheels) reserves 1 GiB regions and kept the
  pages of every table a read or a curation materialised (326 MB resident in its region at
  2,000 turns, while Arrow's own count of live bytes was 6 MB). :func:`settle` makes the system
  allocator pyarrow's pool: freed buffers go back to malloc.
* glibc's malloc gives each thread that allocates an arena of its own (up to eight per core):
  LanceDB's and onnxruntime's thread pools spread their short-lived buffers over a dozen
  arenas, each keeping its peak. :func:`settle` caps the arenas at ``ARENAS`` (as
  ``MALLOC_ARENA_MAX`` would, unless that is set), and :func:`trim` (``malloc_trim``) returns
  the free pages of every arena, after each curated session.

Both are no-ops where they do not apply (another C library, another OS).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading

import pyarrow as pa

log = logging.getLogger(__name__)

ARENAS = 2
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


def trim() -> None:
    """Give the allocators' free pages back to the system (a few ms)."""
    lib = _glibc()
    if lib is not None:
        lib.malloc_trim(0)
