"""What a curator (the heuristics, an LLM, the host's model) makes of a session before it is
stored: episodes and relational tuples, each citing the turns it comes from.

``store.build_rows`` turns them into rows of the memories table (``storage.rows.Memory``): an
episode's text is its ``details`` (else its ``summary``), a tuple's is :func:`store.tuple_text`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Episode:
    """One episode of a session (the paper's appendix A)."""

    title: str
    summary: str
    details: str
    source_ids: list[str]
    refs: list[str]
    timestamp: datetime | None = None    # when it happened, if the curator said (else the session's)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fact:
    """One relational tuple of a session (the paper's appendix B), with its sentence."""

    subject: str
    relation: str
    object: str
    context: str
    text: str                            # "subject relation object", as said
    source_ids: list[str]
    refs: list[str]
    dates: list[str] = field(default_factory=list)   # resolved dates, in words
    timestamp: datetime | None = None
