"""Files an export writes: private to the user (0600, folders 0700, whatever the umask) and
whole. Each is written beside its path under a temporary name, synced, then renamed over it: a
process killed mid-export leaves the previous file as it was (and, at worst, a ``.*.tmp`` file
beside it), never a file cut short under the real name."""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) as 0700; an existing folder is left as it is."""
    missing = [p for p in [path, *path.parents] if not p.exists()]
    for p in reversed(missing):
        p.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(p, DIR_MODE)   # mkdir's mode is masked by the umask
    return path


@contextmanager
def replacing(path: Path) -> Iterator[IO[str]]:
    """A text file to write ``path`` through: renamed over it when the block ends normally,
    removed when it raises."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        with open(fd, "w", encoding="utf-8", newline="\n") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_dir(path.parent)


def write_private(path: Path, text: str) -> Path:
    with replacing(path) as fh:
        fh.write(text)
    return path


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
