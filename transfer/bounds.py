"""What an import reads is bounded: a file's size, its JSON nesting, the length of one line and
the time spent reading and checking it. A file past a bound, or one that cannot be parsed, is
refused whole (:class:`FileRefused`: nothing is written, the message says which bound and where).
Inside a readable file of another tool, a message or conversation trimem cannot store is refused
alone: it is named, with the reason, in the import report (:class:`Refusals`).

Reading is linear in the file's size (no walk revisits what it has seen, cycles included), so the
time bound is a guard, not the expected limit; the write that follows takes the embedder's time.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

MiB = 2**20


@dataclass(frozen=True)
class Bounds:
    max_bytes: int = 512 * MiB         # a whole file (TRIMEM_IMPORT_MAX_BYTES)
    max_depth: int = 64                # JSON nesting, per document (a trimem export: per line)
    max_line_bytes: int = 16 * MiB     # one line of a trimem export or of a memory.json
    timeout_s: float = 1_800.0         # reading and checking (TRIMEM_IMPORT_TIMEOUT_S)
    listed: int = 100                  # refusals listed one by one in the report


class FileRefused(ValueError):
    """The file cannot be imported; nothing was written. The message says why (and where)."""


class Refusal(BaseModel):
    record: str      # which: the line, entity, conversation or message, quoted and cut
    reason: str


@dataclass
class Refusals:
    """Records refused one by one: the first ``limit`` listed, all counted."""

    limit: int = 100
    listed: list[Refusal] = field(default_factory=list)
    messages: int = 0
    curated: int = 0
    other: int = 0

    def add(self, where: str, reason: str, messages: int = 0, curated: int = 0) -> None:
        self.messages += messages
        self.curated += curated
        self.other += not (messages or curated)
        if len(self.listed) < self.limit:
            self.listed.append(Refusal(record=where, reason=reason[:300]))

    @property
    def total(self) -> int:
        return self.messages + self.curated + self.other


class Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise FileRefused(f"reading and checking the file took longer than {self.seconds:g} s "
                              "(TRIMEM_IMPORT_TIMEOUT_S)")


def show(value: Any, n: int = 60) -> str:
    """A hostile string as it may appear in a report or an error: quoted, control and
    direction characters escaped (``repr``), cut to ``n`` characters."""
    s = value if isinstance(value, str) else json.dumps(value, default=str)[:n + 1]
    return repr(s[:n]) + ("…" if len(s) > n else "")


def read_text(path: Path, bounds: Bounds) -> str:
    """The whole file as text: refused past ``max_bytes`` or when it is not UTF-8."""
    try:
        size = path.stat().st_size
        if size > bounds.max_bytes:
            raise FileRefused(f"the file is {size / MiB:.0f} MiB; the limit is "
                              f"{bounds.max_bytes / MiB:.0f} MiB (TRIMEM_IMPORT_MAX_BYTES)")
        with open(path, "rb") as fh:
            data = fh.read(bounds.max_bytes + 1)
    except OSError as exc:
        raise FileRefused(f"cannot read it: {exc.strerror or exc}") from None
    if len(data) > bounds.max_bytes:
        raise FileRefused(f"the file grew past the limit of {bounds.max_bytes / MiB:.0f} MiB "
                          "(TRIMEM_IMPORT_MAX_BYTES)")
    return decode(data, "the file")


def decode(data: bytes, where: str, bom: bool = True) -> str:
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        raise FileRefused(f"{where} is not UTF-8 text (byte {exc.start})") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def load_json(text: str, bounds: Bounds, where: str = "") -> Any:
    """Parse one JSON document; :class:`FileRefused` if it is not JSON, holds NaN or Infinity,
    a number past Python's 4,300 digits, or nests deeper than ``bounds.max_depth``."""
    at = f"{where}: " if where else ""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise FileRefused(f"{at}nested deeper than {bounds.max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise FileRefused(f"{at}not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") \
            from None
    except ValueError as exc:   # parse_constant, or int() past sys.get_int_max_str_digits()
        raise FileRefused(f"{at}not JSON ({exc})") from None
    if depth_over(data, bounds.max_depth):
        raise FileRefused(f"{at}nested deeper than {bounds.max_depth} levels")
    return data


def depth_over(data: Any, limit: int) -> bool:
    """Whether ``data`` nests deeper than ``limit`` (level by level: no recursion to exhaust)."""
    level, depth = [data], 0
    while level:
        level = [v for v in level if isinstance(v, (dict, list))]
        if level:
            depth += 1
            if depth > limit:
                return True
        level = [c for v in level for c in (v.values() if isinstance(v, dict) else v)]
    return False


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
