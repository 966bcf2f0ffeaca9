"""Stable ids: the same inputs always give the same id.

A retried write cannot add a twin, and two homes that curate the same rows (an export imported
elsewhere, a second ingestion) name what they build alike, so rankings that break ties by id
order them alike. ``tools.remember`` names host-curated memories with it, ``hybrid`` its
episodes and facts. (The wiki's ``claims.hid`` predates it: a 16-hex SHA-1 with the same
separator; its ids are stored in existing homes, so it stays.)
"""

from __future__ import annotations

import hashlib


def stable_id(prefix: str, *parts: str) -> str:
    return f"{prefix}_{hashlib.sha256(chr(31).join(parts).encode()).hexdigest()[:20]}"
