"""A request whose id is not a string or an integer gets an error, never silence.

JSON-RPC 2.0 lets a request's id be a string, a number or null (numbers "SHOULD NOT contain
fractional parts"); MCP narrows it: requests must carry a string or integer id, never null, and
the SDK's types say the same (``RequestId``: a strict int or a str). A request with any other id
(``1.5``, ``2.0``, ``1e3``, ``true``, ``null``, ``{}``, ``[]``) fails the SDK's request type but
passes its notification type, which ignores members it does not know: the SDK takes it for a
notification and drops it, and the host waits for a reply that never comes (over stdio, and over
HTTP on the 2025-11-25 transport, which answers 202 Accepted).

The choice here: such a request is an *Invalid Request*. It is answered with the JSON-RPC error
``-32600`` whose ``id`` is null, as JSON-RPC 2.0 (section 5) asks when the request's id cannot
be used, and whose message quotes the id that was sent, so the host can tell which call failed.
A fractional (or any non-integer) number is not echoed back as an id, nor is the request run:
MCP requires an integer, and the SDK can neither type nor route another. The 2026-07-28 HTTP
transport of the SDK already answers these with -32600 and id null; this module makes the
stdio transport (``server/stdio.py``) and the 2025-11-25 HTTP one (``server/http.py``) agree.

The check costs nothing on an ordinary line: a regular-expression scan (in C) finds no ``"id"``
member whose value starts with anything but a digit, ``-`` or ``"``, and no escaped ``i`` or
``d`` that could spell the key; only a line that has one is parsed.
"""

from __future__ import annotations

import json
import re

import mcp_types as types

_SUSPECT = re.compile(r'"id"\s*:\s*(?:[^\s"\-0-9]|-?[0-9]+[.eE])|\\u006[49]')


def invalid_id(raw: str) -> types.JSONRPCError | None:
    """The error that answers ``raw`` (one JSON-RPC message as text) when it is a request whose
    id is neither a string nor an integer; None for anything else (the SDK handles it)."""
    if not _SUSPECT.search(raw):
        return None
    try:
        msg = json.loads(raw)
    except (ValueError, RecursionError):   # the SDK answers a parse error
        return None
    if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
        return None
    rid = msg["id"]
    if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
        return None
    sent = json.dumps(rid, ensure_ascii=False)
    sent = sent if len(sent) <= 60 else sent[:57] + "..."
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
        code=types.INVALID_REQUEST,
        message=f"Invalid request: the id {sent} is not a string or an integer, which MCP "
                "requires of every request; the request was not run"))


class InvalidIdCheck:
    """ASGI middleware of the HTTP transport: a POSTed request with an invalid id is answered
    400 with the error above; anything else reaches ``app`` with its body replayed as read."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] != "http.request":   # the client left: nothing to answer
                return
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        err = invalid_id(body.decode("utf-8", "replace"))
        if err is not None:
            reply = err.model_dump_json(by_alias=True, exclude_unset=True).encode()
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json")]})
            return await send({"type": "http.response.body", "body": reply})
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()   # after the body: the disconnect, when it comes
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)
