"""The ``trimem-export`` JSONL format, version 1 (specified in docs/export-format.md).

Line 1 is a :class:`Header`; every later line is one record with a ``type``: ``session``,
``message``, ``curated`` or ``forget``. Reading validates every line before anything is written:
a malformed line is reported with its line number and nothing is imported.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import IO, Annotated, Any, Iterable, Iterator, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

FORMAT = "trimem-export"
VERSION = 1


class FormatError(ValueError):
    """The file is not a valid trimem export (the message names the line)."""


class _Rec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Header(_Rec):
    format: Literal["trimem-export"]
    version: int
    exported_at: datetime | None = None
    producer: str | None = None
    namespaces: list[str] = Field(default_factory=list)


class SessionRec(_Rec):
    type: Literal["session"]
    namespace: str
    session_id: str
    session_time: datetime | None = None


class MessageRec(_Rec):
    type: Literal["message"]
    namespace: str
    session_id: str
    seq: int = 0
    id: str | None = None              # the id it had where it was exported (for forget records)
    ref: str | None = None
    speaker: str | None = None
    timestamp: datetime | None = None
    content: str
    metadata: dict[str, Any] | None = None


class CuratedRec(_Rec):
    type: Literal["curated"]
    namespace: str
    session_id: str
    kind: Literal["episode", "fact"]
    id: str | None = None
    timestamp: datetime | None = None
    refs: list[str] = Field(default_factory=list)
    # an episode's fields
    title: str = ""
    summary: str = ""
    details: str = ""
    # a fact's fields
    subject: str = ""
    relation: str = ""
    object: str = ""
    context: str = ""


class ForgetRec(_Rec):
    type: Literal["forget"]
    namespace: str
    at: datetime | None = None
    ids: list[str] = Field(default_factory=list)      # source (and memory) ids removed
    refs: list[str] = Field(default_factory=list)
    sessions: list[str] = Field(default_factory=list)


Record = Annotated[Union[SessionRec, MessageRec, CuratedRec, ForgetRec], Field(discriminator="type")]
_RECORD = TypeAdapter(Record)


def dump_line(rec: BaseModel) -> str:
    data = rec.model_dump(mode="json", exclude_none=True, exclude_defaults=False)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_all(fp: IO[str], header: Header, records: Iterable[BaseModel]) -> int:
    fp.write(dump_line(header))
    n = 0
    for rec in records:
        fp.write(dump_line(rec))
        n += 1
    return n


def _loads(no: int, line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise FormatError(f"line {no}: not JSON ({exc.msg})") from exc


def _problem(exc: ValidationError) -> str:
    e = exc.errors()[0]
    where = ".".join(str(p) for p in e["loc"]) or "record"
    return f"{where}: {e['msg']}"


def read_all(lines: Iterable[str]) -> tuple[Header, list]:
    """Parse and validate a whole export; :class:`FormatError` on the first bad line."""
    it: Iterator[tuple[int, str]] = ((n, s) for n, s in enumerate(lines, 1) if s.strip())
    first = next(it, None)
    if first is None:
        raise FormatError("the file is empty")
    data = _loads(first[0], first[1])
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FormatError(f"line {first[0]}: not a {FORMAT} file (the first line must be its "
                          "header, {\"format\": \"trimem-export\", \"version\": 1})")
    try:
        header = Header.model_validate(data)
    except ValidationError as exc:
        raise FormatError(f"line {first[0]}: {_problem(exc)}") from exc
    if header.version > VERSION:
        raise FormatError(f"format version {header.version} is newer than this trimem reads "
                          f"({VERSION}): upgrade trimem")
    records = []
    for no, line in it:
        try:
            records.append(_RECORD.validate_python(_loads(no, line)))
        except ValidationError as exc:
            raise FormatError(f"line {no}: {_problem(exc)}") from exc
    return header, records
