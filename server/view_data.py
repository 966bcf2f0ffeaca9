"""What ``trimem view`` reads of a namespace's sessions (its wiki pages come from
``tools/wiki_pages.py``); never LanceDB directly."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..storage.rows import Session
    from ..storage.space import Space


def sessions(space: Space) -> list[Session]:
    far = datetime.max.replace(tzinfo=timezone.utc)
    rows = [s for s in space.sessions.all() if s.namespace == space.namespace]
    return sorted(rows, key=lambda s: (s.session_time or far, s.session_id))
