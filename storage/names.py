"""Namespace keys, forget stamps and the small token files they use, without loading LanceDB
(a hook process reads them)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


def namespace_key(namespace: str) -> str:
    """A table-name-safe, collision-free key: readable slug + hash of the exact name."""
    slug = re.sub(r"[^a-z0-9]+", "_", namespace.lower()).strip("_")[:32] or "ns"
    return f"{slug}_{hashlib.sha256(namespace.encode()).hexdigest()[:10]}"


def forget_stamp_path(home: str, key: str) -> Path | None:
    """A small file holding the token of the latest forget in the namespace whose key is
    ``key`` (:func:`namespace_key`), for a local store:
    readers that keep text outside LanceDB (the capture digest) compare it without opening
    the store. None for an object-store URI (nothing there is kept outside the store)."""
    if "://" in home:
        return None
    return Path(home) / "_marks" / f"{key}.forget"


def read_token(path: Path) -> str:
    """The token a small file holds ("" when it is missing or unreadable)."""
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def write_token(path: Path, token: str) -> None:
    """Write ``token`` to ``path`` whole (written beside, renamed), making its folder."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(token, encoding="ascii")
    os.replace(tmp, path)


def read_forget_stamp(home: str, key: str) -> str:
    """The token of the latest forget in namespace ``key`` ("" when none was recorded)."""
    path = forget_stamp_path(home, key)
    return read_token(path) if path is not None else ""


def write_forget_stamp(home: str, key: str, token: str) -> None:
    """Record ``token`` as the latest forget in namespace ``key``."""
    path = forget_stamp_path(home, key)
    if path is not None:
        write_token(path, token)
