"""The stdio transport, with an answer for every line it cannot parse.

The MCP SDK's stdio reader hands a line it cannot parse (a lone UTF-16 surrogate such as
``\\ud800``, a 5,000-digit number, arrays nested 1,000 deep, plain garbage) to the server as an
exception, and the server drops it with a debug log: the host waits for a reply that never
comes. :class:`AnsweringReader` sits between the two and answers each such line at once with a
JSON-RPC error (``-32700`` parse error, or ``-32600`` invalid request for valid JSON that is not
a JSON-RPC message), carrying the request's ``id`` when it can be read from the line, else
``null`` as JSON-RPC 2.0 asks. The id is found by a linear scan of the top level of the line, so
no input can make it recurse or run long.

A line that parses but is a request with an id MCP does not allow (``1.5``, ``{}``, ``null``)
never reaches the SDK, which would take it for a notification and stay silent: :class:`CheckedLines`
answers it with ``-32600`` and id null (``server/request_ids.py`` says why).
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast
import io
import json

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from mcp.server import stdio as sdk
import anyio

from .request_ids import invalid_id

if TYPE_CHECKING:
    from ..tools.runtime import Runtime

log = logging.getLogger(__name__)
_NUMBER = re.compile(r"-?\d{1,18}(?![\d.eE])")
_STRING = re.compile(r'"((?:[^"\\]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4}){0,512})"')


def top_level_id(line: str) -> int | str | None:
    """The value of the top-level ``"id"`` key of a JSON object line, when it is a plain
    number or string; None otherwise (nested ``id`` keys, as in metadata, are skipped)."""
    depth, i, n = 0, 0, len(line)
    while i < n:
        ch = line[i]
        if ch == '"':
            m = _STRING.match(line, i)
            end = m.end() if m else _string_end(line, i)
            if depth == 1 and m and m.group(1) == "id":
                j = end
                while j < n and line[j] in " \t\r\n":
                    j += 1
                if j < n and line[j] == ":":
                    return _id_value(line, j + 1)
            i = end
            continue
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        i += 1
    return None


def _string_end(line: str, i: int) -> int:
    """Index just past the JSON string starting at ``line[i]`` (or the end of the line)."""
    i += 1
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        if line[i] == '"':
            return i + 1
        i += 1
    return len(line)


def _id_value(line: str, j: int) -> int | str | None:
    while j < len(line) and line[j] in " \t\r\n":
        j += 1
    if m := _NUMBER.match(line, j):
        return int(m.group(0))
    if (m := _STRING.match(line, j)) and "\\ud8" not in m.group(1).lower() \
            and "\\udc" not in m.group(1).lower():
        try:
            return json.loads(m.group(0))
        except ValueError:
            return None
    return None


def error_reply(exc: Exception) -> SessionMessage:
    """The JSON-RPC error that answers a line the transport could not parse."""
    rid, code, reason = None, types.PARSE_ERROR, str(exc)
    if isinstance(exc, ValidationError) and exc.errors():
        first = exc.errors()[0]
        got = first.get("input")
        if first.get("type") == "json_invalid":
            reason = _explain(first.get("msg", ""))
            rid = top_level_id(got) if isinstance(got, str) else None
        else:   # valid JSON, but not a JSON-RPC message
            code, reason = types.INVALID_REQUEST, "not a JSON-RPC 2.0 request, notification or response"
            rid = got.get("id") if isinstance(got, dict) else None
            if isinstance(rid, bool) or not isinstance(rid, (int, str)) or \
                    (isinstance(rid, str) and len(rid) > 512):
                rid = None
    message = ("Parse error: " if code == types.PARSE_ERROR else "Invalid request: ") + reason
    log.warning("answered an unparsable stdin line (id %r) with %d: %s", rid, code, message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid,
                                             error=types.ErrorData(code=code, message=message)))


def _explain(msg: str) -> str:
    low = msg.lower()
    if "surrogate" in low or "hex escape" in low:
        return (f"{msg} (a string holds a lone UTF-16 surrogate such as \\ud800, which is not "
                "valid Unicode; send each character as UTF-8 or as a surrogate pair)")
    if "recursion limit" in low:
        return f"{msg} (the request is nested too deeply)"
    if "number out of range" in low:
        return f"{msg} (a number is too large)"
    return msg


class AnsweringReader:
    """The transport's read stream, minus the exceptions: each one is answered on the write
    stream (see module docstring) and never reaches the server."""

    def __init__(self, inner: Any, write: Any):
        self._inner, self._write = inner, write

    @property
    def last_context(self):
        return getattr(self._inner, "last_context", None)

    async def __aenter__(self) -> AnsweringReader:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc_val: BaseException | None, exc_tb: TracebackType | None) -> bool | None:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    def __aiter__(self) -> AnsweringReader:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(error_reply(item))


class CheckedLines:
    """The stdin lines the SDK's reader iterates, minus each request with an invalid id, which
    is answered on the write stream instead (see module docstring)."""

    def __init__(self, lines: Any):
        self._lines: AsyncIterator[str] = aiter(lines)
        self._write: Any = None
        self._ready = anyio.Event()

    def answer_on(self, write: Any) -> None:
        self._write = write
        self._ready.set()

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anext(self._lines)
            err = invalid_id(line)
            if err is None:
                return line
            await self._ready.wait()
            log.warning("answered a request with an invalid id: %s", err.error.message)
            await self._write.send(SessionMessage(err))


@asynccontextmanager
async def checked_stdio():
    """The SDK's ``stdio_server`` reading :class:`CheckedLines`. The SDK claims fd 0 only for a
    stdin it opens itself, so its claim is made here with its own helper: while serving, fd 0
    is the null device (a child or a stray read gets EOF) and the wire is read from a private
    duplicate; fd 0 is restored on exit."""
    release = None
    try:    # the SDK's private helpers: were they to go, stdin is read in place (as SDK 1.x did)
        buffer, release = sdk._claim_fd(0, sys.stdin, "rb", sdk._open_stdin_diversion)
        text = sdk._UnownedTextWrapper(buffer, encoding="utf-8", errors="replace")
    except AttributeError:
        text = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    try:
        lines = CheckedLines(anyio.wrap_file(text))
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            lines.answer_on(write_stream)
            yield read_stream, write_stream
    finally:
        if release is not None:
            release()


class StdioServer(MCPServer):
    """``MCPServer`` whose stdio transport answers every malformed line (see module docstring)."""

    runtime: Runtime   # set by ``build_server``: the objects the tools use, for the CLI and tests

    async def run_stdio_async(self) -> None:
        async with checked_stdio() as (read_stream, write_stream):
            await self._lowlevel_server.run(AnsweringReader(read_stream, write_stream), write_stream,
                                            self._lowlevel_server.create_initialization_options())
