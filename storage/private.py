"""What trimem writes is its user's alone: files 0600, folders 0700.

LanceDB writes its tables' files itself, with the process's umask; so do the lock files, the
capture state, the logs and the caches trimem writes beside them. Setting the umask once, when
a process starts using a memory folder (``Store``, ``CaptureState``, the ``trimem`` command),
covers them all, including files written by libraries. The umask belongs to the whole process:
a program that embeds trimem gets it too (tests/storage/test_private_files.py walks a memory
folder after every tool and the capture hook).
"""

from __future__ import annotations

import os

PRIVATE_UMASK = 0o077


def private_umask() -> None:
    """Make every file and folder this process creates from now on private to its user."""
    if os.name == "posix":
        os.umask(PRIVATE_UMASK)
