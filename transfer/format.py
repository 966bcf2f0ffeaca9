"""The ``trimem-export`` JSONL format, version 2 (specified in docs/export-format.md).

Line 1 is a :class:`Header`; every later line is one record with a ``type``: ``session``,
``message``, ``curated`` or ``forget``; the last line is the ``end`` record, counting the records
before it, so a file cut short (a copy that stopped, a disk that filled) is refused rather than
imported in part. Version 1 files (no end record) are read too. Reading validates every line
before anything is written: a malformed line is reported with its line number and nothing is
imported. Reading is bounded (``transfer/bounds.py``): file size, line length, JSON nesting.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import IO, Annotated, Any, Iterable, Iterator, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .bounds import Bounds, Deadline, FileRefused, decode, load_json

FORMAT = "trimem-export"
VERSION = 2


class FormatError(FileRefused):
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


class EndRec(_Rec):
    type: Literal["end"]
    records: int                      # how many records stand between the header and this line


Record = Annotated[Union[SessionRec, MessageRec, CuratedRec, ForgetRec], Field(discriminator="type")]
_RECORD = TypeAdapter(Record)


def dump_line(rec: BaseModel) -> str:
    data = rec.model_dump(mode="json", exclude_none=True, exclude_defaults=False)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"


def write_all(fp: IO[str], header: Header, records: Iterable[BaseModel]) -> int:
    """Write the header, the records and the end record; returns how many records."""
    fp.write(dump_line(header))
    n = 0
    for rec in records:
        fp.write(dump_line(rec))
        n += 1
    fp.write(dump_line(EndRec(type="end", records=n)))
    return n


def _loads(no: int, line: str, bounds: Bounds) -> Any:
    if len(line) > bounds.max_line_bytes:
        raise FormatError(f"line {no}: longer than {bounds.max_line_bytes} characters")
    try:
        return load_json(line, bounds)
    except FileRefused as exc:
        raise FormatError(f"line {no}: {exc}") from None


def _problem(exc: ValidationError) -> str:
    e = exc.errors()[0]
    where = ".".join(str(p) for p in e["loc"]) or "record"
    return f"{where}: {e['msg']}"


def read_all(lines: Iterable[str], bounds: Bounds | None = None,
             deadline: Deadline | None = None) -> tuple[Header, list]:
    """Parse and validate a whole export; :class:`FormatError` on the first bad line."""
    bounds = bounds or Bounds()
    it: Iterator[tuple[int, str]] = ((n, s) for n, s in enumerate(lines, 1) if s.strip())
    first = next(it, None)
    if first is None:
        raise FormatError("the file is empty")
    data = _loads(first[0], first[1], bounds)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FormatError(f"line {first[0]}: not a {FORMAT} file (the first line must be its "
                          "header, {\"format\": \"trimem-export\", \"version\": 2})")
    try:
        header = Header.model_validate(data)
    except ValidationError as exc:
        raise FormatError(f"line {first[0]}: {_problem(exc)}") from None
    if header.version > VERSION:
        raise FormatError(f"format version {header.version} is newer than this trimem reads "
                          f"({VERSION}): upgrade trimem")
    records: list = []
    end: EndRec | None = None
    for no, line in it:
        if deadline is not None and no % 1024 == 0:
            deadline.check()
        if end is not None:
            raise FormatError(f"line {no}: a line after the end record")
        data = _loads(no, line, bounds)
        try:
            if isinstance(data, dict) and data.get("type") == "end" and header.version >= 2:
                end = EndRec.model_validate(data)
            else:
                records.append(_RECORD.validate_python(data))
        except ValidationError as exc:
            raise FormatError(f"line {no}: {_problem(exc)}") from None
        if end is not None and end.records != len(records):
            raise FormatError(f"line {no}: the end record counts {end.records} records, the file "
                              f"holds {len(records)}: records are missing or were added")
    if header.version >= 2 and end is None:
        raise FormatError(f"the file ends after {len(records)} records without its end record: "
                          "it is truncated (export it again, or copy it whole)")
    return header, records


def read_export(path: Path, bounds: Bounds, deadline: Deadline | None = None) -> tuple[Header, list]:
    """:func:`read_all` of a file, read line by line within ``bounds`` (no line is read past
    ``max_line_bytes``, the file not past ``max_bytes``)."""
    try:
        size = path.stat().st_size
        if size > bounds.max_bytes:
            raise FormatError(f"the file is {size >> 20} MiB; the limit is {bounds.max_bytes >> 20} "
                              "MiB (TRIMEM_IMPORT_MAX_BYTES)")
        with open(path, "rb") as fh:
            def lines() -> Iterator[str]:
                no = 0
                while raw := fh.readline(bounds.max_line_bytes + 1):
                    no += 1
                    if len(raw) > bounds.max_line_bytes:
                        raise FormatError(f"line {no}: longer than {bounds.max_line_bytes} bytes")
                    yield decode(raw, f"line {no}", bom=no == 1)
            return read_all(lines(), bounds, deadline)
    except OSError as exc:
        raise FileRefused(f"cannot read it: {exc.strerror or exc}") from None
