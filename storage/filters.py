"""Which sources a search or a count may see, as typed values: the only filter that crosses the
storage boundary. Strategies and tools say *what* they want (a session, a time window); this
module alone turns it into a LanceDB filter, with every value quoted by ``db.sql_str`` /
``db.sql_time``, so no caller above ``storage/`` writes SQL and no stored string reaches a
filter unescaped."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class SourceFilter:
    """Sources of ``session_id`` (if given) stamped within [``since``, ``until``] (each end
    optional, inclusive) and, with ``speakers``, said by one of them (a source without a speaker
    is then left out). The empty filter lets every source through."""

    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    speakers: frozenset[str] | None = None

    def sql(self) -> str | None:
        """The LanceDB ``where`` for this filter, or None when it filters nothing."""
        from .db import sql_in, sql_str, sql_time  # lazy: storage.db loads lancedb, not at start-up

        parts = []
        if self.session_id is not None:
            parts.append(f"session_id = {sql_str(self.session_id)}")
        if self.speakers is not None:
            parts.append(sql_in("speaker", sorted(self.speakers)))
        if self.since is not None:
            parts.append(sql_time("timestamp", ">=", self.since))
        if self.until is not None:
            parts.append(sql_time("timestamp", "<=", self.until))
        return " AND ".join(parts) or None


def where_of(flt: SourceFilter | None) -> str | None:
    return flt.sql() if flt is not None else None
