"""Input checks shared by the tools. Each failure is a ToolFailure that says what to fix."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Literal, overload

from .errors import ToolFailure
from .runtime import Limits


def unicode(name: str, value: str) -> str:
    """Refuse a lone UTF-16 surrogate (\\ud800-\\udfff): it is not Unicode text, cannot be
    stored as UTF-8, and would fail deep inside storage instead of here."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolFailure(f"{name} holds a lone UTF-16 surrogate at position {exc.start} "
                        "(\\ud800-\\udfff), which is not valid Unicode text") from None
    return value


@overload
def text_field(name: str, value: str | None, limits: Limits, *, required: Literal[True]) -> str: ...
@overload
def text_field(name: str, value: str | None, limits: Limits, *,
               required: bool = False) -> str | None: ...
def text_field(name: str, value: str | None, limits: Limits, *, required: bool = False) -> str | None:
    """Ids, refs, speakers, session ids and namespaces: bounded, no NUL or other control chars."""
    if value is None:
        if required:
            raise ToolFailure(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise ToolFailure(f"{name} must be a string")
    if required and not value.strip():
        raise ToolFailure(f"{name} must not be empty")
    if len(value) > limits.max_field_chars:
        raise ToolFailure(f"{name} is {len(value)} characters; the limit is {limits.max_field_chars}")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ToolFailure(f"{name} must not contain control characters (NUL, newline, ...)")
    return unicode(name, value)


def namespace(value: str, limits: Limits) -> str:
    return text_field("namespace", value, limits, required=True)


def when(name: str, value: str | datetime | None) -> datetime | None:
    """An ISO-8601 time; one without a zone is taken as UTC. Any time from 0001-01-01 to
    9999-12-31 (UTC) is accepted, stored and searchable; anything else is refused here."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        try:
            dt = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ToolFailure(f"{name} {value!r} is not an ISO-8601 time such as "
                            "2024-05-08T13:56:00Z (years 0001 to 9999)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    try:
        dt.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise ToolFailure(f"{name} {value!r} is out of range: times must fall between "
                        "0001-01-01 and 9999-12-31 in UTC") from None
    return dt


def metadata(value: Any, limits: Limits, where: str) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ToolFailure(f"{where}.metadata must be an object")

    def depth(v: Any, d: int = 1) -> int:
        if d > limits.max_metadata_depth:
            return d
        if isinstance(v, dict):
            return max([depth(x, d + 1) for x in v.values()] or [d])
        if isinstance(v, list):
            return max([depth(x, d + 1) for x in v] or [d])
        return d

    if depth(value) > limits.max_metadata_depth:
        raise ToolFailure(f"{where}.metadata is nested deeper than {limits.max_metadata_depth} levels")
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError) as exc:
        raise ToolFailure(f"{where}.metadata is not plain JSON: {exc}") from exc
    if size > limits.max_metadata_bytes:
        raise ToolFailure(f"{where}.metadata is {size} bytes as JSON; the limit is "
                        f"{limits.max_metadata_bytes}")
    return value


def budget(value: int, limits: Limits) -> int:
    """A whole number of tokens: an int, never a bool or a float (2000.0, NaN and inf included;
    the MCP layer has already turned a JSON 2000.0 into 2000)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolFailure("budget_tokens must be a whole number")
    if value <= 0:
        raise ToolFailure(f"budget_tokens must be positive (got {value}); 2000 is a good default")
    if value > limits.max_budget_tokens:
        raise ToolFailure(f"budget_tokens {value} is over the limit of {limits.max_budget_tokens}")
    return value
