"""Small helpers for the tests (importable: tests/ is on pytest's pythonpath)."""

from __future__ import annotations


def payload(res) -> dict:
    """The structured result of a successful tool call."""
    assert not res.is_error, " ".join(getattr(c, "text", "") for c in res.content)
    return res.structured_content


def error_text(res) -> str:
    assert res.is_error, f"expected a tool error, got {res.structured_content}"
    return " ".join(getattr(c, "text", "") for c in res.content)


def turns(*texts: str, speaker: str = "Ana", prefix: str = "t") -> list[dict]:
    return [{"content": t, "speaker": speaker, "ref": f"{prefix}{i}"} for i, t in enumerate(texts, 1)]
