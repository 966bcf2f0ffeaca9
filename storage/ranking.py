"""What the searches of a namespace's tables share: the text a message is found by, the
full-text index's analyzer and the order of tied results."""

from __future__ import annotations

from typing import Any


def fts_config() -> Any:
    """BM25 over English-stemmed, stop-word-free, ASCII-folded tokens: conversational turns are
    short, so stemming ("moved"/"moving") matters more than phrase positions."""
    from lancedb.index import FTS  # lazy: lancedb loads through db.py (validators deferred)

    return FTS(language="English", stem=True, remove_stop_words=True, ascii_folding=True,
               with_position=False)


def search_text(row: dict) -> str:
    """What a source (a row to write) is found by: :func:`search_text_of` its speaker and text."""
    return search_text_of(row.get("speaker"), row["text"])


def search_text_of(speaker: str | None, text: str) -> str:
    """What a message is found by: its text, prefixed with the speaker when known, so that
    "what did Ana say about ..." matches Ana's own turns by name (lexically and semantically)."""
    return f"{speaker}: {text}" if speaker else text


# LanceDB returns rows of equal score in their physical order, which compaction changes at
# timing-dependent moments: two homes holding the same rows (an export imported elsewhere, or
# the same store before and after a compaction) could cut a tie at the limit differently. Each
# search fetches TIE_EXTRA rows more and orders by (score to 5 decimals, id), so equal data gives
# equal results (unless more than TIE_EXTRA rows tie at the cut).
TIE_EXTRA = 64


def ranked(pairs: list[tuple[str, float]], limit: int) -> list[tuple[str, float]]:
    """``(id, score)`` best first, ties by id, cut to ``limit``."""
    return sorted(pairs, key=lambda kv: (-round(kv[1], 5), kv[0]))[:limit]
