"""The hosts whose session logs capture reads, and the reader of each.

A reader takes a log's path, the byte offset where the last capture ended, the longest message
to keep and the reader's own state from that capture, and returns a ``Chunk`` (``transcript.py``)
of the entries under the shared storage rule. Claude Code's transcript is read by the hooks;
the logs of the other agent CLIs by ``trimem import --from HOST`` (``capture/agentlog.py``).
Each reader module is imported only when its host is read.
"""

from __future__ import annotations

from typing import Callable

from . import codex, gemini
from .transcript import Chunk, read_from

Reader = Callable[[str, int, int, dict], Chunk]

CLAUDE_CODE = "claude-code"


def _claude(path: str, offset: int, max_chars: int, state: dict) -> Chunk:
    return read_from(path, offset, max_chars)


def _codex(path: str, offset: int, max_chars: int, state: dict) -> Chunk:
    return codex.read(path, offset, max_chars, state)


def _gemini(path: str, offset: int, max_chars: int, state: dict) -> Chunk:
    return gemini.read(path, offset, max_chars, state)


READERS: dict[str, Reader] = {CLAUDE_CODE: _claude, "codex": _codex, "gemini": _gemini}


def reader_for(host: str | None) -> Reader:
    """The reader of ``host``'s log (Claude Code's transcript when no host is named)."""
    try:
        return READERS[host or CLAUDE_CODE]
    except KeyError:
        raise ValueError(f"no reader for host {host!r} (known: {sorted(READERS)})") from None
