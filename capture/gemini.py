"""Google Gemini CLI's chat recordings, read under the shared storage rule.

Gemini CLI records each session under ``~/.gemini/tmp/<project>/chats/`` (``GEMINI_CLI_HOME``
moves ``~``). Since v0.39.0 a session is a JSON Lines file ``session-<time>-<id8>.jsonl``: a
first line ``{sessionId, projectHash, startTime, lastUpdated, kind}``, then each message
``{id, timestamp, type, content, displayContent?, toolCalls?, thoughts?, tokens?, model?}``
appended, and appended again whole each time it changes (tokens, tool calls), plus
``{"$set": {...}}`` metadata updates (``$set.messages``: every message again) and
``{"$rewindTo": id}``. Before v0.39.0 a session was one JSON document ``session-….json``
holding the same fields and a ``messages`` list, rewritten whole on every change.
docs/capture.md ("Other agent CLIs") names the source files this follows.

The rule, as for Claude Code: ``user`` text as it is (``displayContent`` when the CLI kept what
the user typed apart from the expanded prompt), ``gemini`` text as speaker ``assistant``; a
tool call (``toolCalls[]``, or a ``functionCall`` part) as one line ``[tool NAME] ARGS``, its
result (``toolCalls[].result`` or a ``functionResponse`` part) as a bounded excerpt, both
speaker ``tool``; thoughts never; ``info`` / ``error`` / ``warning`` messages, slash commands,
the CLI's injected context (``<session_context>``, ``<hook_context>``), compression summaries
(``<state_snapshot>``) and subagent sessions skipped and counted.

Refs are the recording's own ids: ``gemini:<session>:msg:<message id>`` and
``gemini:<session>:call:<call id>`` / ``…:out:<call id>``, so a message written again (or both
as a tool call's result and as the next request's ``functionResponse``) is stored once. A JSON
Lines file is read on from the byte offset where the last read ended; the older whole-file JSON
is read again whole when its size or modification time changed, and refs keep what was stored
from being stored twice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from ..strategies.base import TOOL_SPEAKER
from .transcript import TOOL_RESULT_CHARS, Chunk, Entry, clean_id, cut, jsonl_objects, tool_note

MAX_JSON_BYTES = 64_000_000     # an older whole-file session larger than this is not read
COMMANDS = ("/", "?")
CONTEXT = ("<session_context>", "<hook_context>")
COMPRESSION_ACK = "Got it. Thanks for the additional context!"


def _parts(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content if isinstance(p, (str, dict))]
    return []


def _compact(obj: Any) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return ""


def result_text(result: Any) -> str:
    """A tool's result as text: its text parts and each ``functionResponse``'s ``output`` (else
    its ``error``, else the response as JSON); inline data is left out."""
    out = []
    for p in _parts(result):
        fr = p.get("functionResponse")
        if isinstance(p.get("text"), str):
            out.append(p["text"])
        elif isinstance(fr, dict):
            resp = fr.get("response")
            if isinstance(resp, dict) and isinstance(resp.get("output"), str):
                out.append(resp["output"])
            elif isinstance(resp, dict) and isinstance(resp.get("error"), str):
                out.append(resp["error"])
            elif resp is not None:
                out.append(_compact(resp))
    return "\n".join(out)


def _key(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    value = clean_id(value, 10**9)
    if len(value) <= 100:
        return value
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:24]


class _Reader:
    def __init__(self, chunk: Chunk, max_chars: int):
        self.chunk, self.max_chars = chunk, max_chars
        self.skipped: Counter = chunk.skipped
        self.refs: set[str] = set()

    def add(self, ref: str, speaker: str, text: str, ts: str | None, limit: int) -> None:
        text = cut(text, limit)
        if not text:
            self.skipped["empty"] += 1
        elif ref in self.refs:
            self.skipped["repeat"] += 1      # the same message or call written again
        else:
            self.refs.add(ref)
            self.chunk.entries.append(Entry(ref=ref, speaker=speaker, text=text, timestamp=ts))

    def record(self, obj: dict) -> None:
        st = self.chunk.state
        if "$rewindTo" in obj:
            self.skipped["rewind"] += 1
        elif isinstance(obj.get("$set"), dict):
            msgs = obj["$set"].get("messages")
            if isinstance(msgs, list):
                for m in msgs:
                    self.message(m)
            else:
                self.skipped["entry:metadata"] += 1
        elif isinstance(obj.get("sessionId"), str) and "type" not in obj:
            st["sid"] = _key(obj["sessionId"]) or "unknown"
            st["subagent"] = obj.get("kind") == "subagent"
            self.chunk.session_id = self.chunk.session_id or clean_id(obj["sessionId"])
            msgs = obj.get("messages")
            for m in msgs if isinstance(msgs, list) else []:
                self.message(m)
        elif isinstance(obj.get("id"), str):
            self.message(obj)
        else:
            self.skipped["entry:unknown"] += 1

    def message(self, m: Any) -> None:
        st = self.chunk.state
        kind = m.get("type") if isinstance(m, dict) else None
        mid = _key(m.get("id")) if isinstance(m, dict) else None
        if not isinstance(m, dict) or not mid or not isinstance(kind, str):
            self.skipped["malformed"] += 1
            return
        if st.get("subagent"):
            self.skipped["subagent"] += 1
            return
        if kind not in ("user", "gemini"):
            self.skipped[f"entry:{kind}"[:40]] += 1
            return
        sid = st.get("sid") or "unknown"
        ts = m.get("timestamp") if isinstance(m.get("timestamp"), str) else None
        parts = _parts(m.get("content"))
        self._text(m, kind, sid, mid, ts, parts)
        self._parts_tools(sid, mid, ts, parts)
        calls = m.get("toolCalls")
        if kind == "gemini" and isinstance(calls, list):
            self._tool_calls(sid, ts, calls)

    def _text(self, m: dict, kind: str, sid: str, mid: str, ts: str | None, parts: list[dict]) -> None:
        """The message's own words (for a user, what was shown: ``displayContent``); thinking
        is counted, never stored."""
        shown = _parts(m.get("displayContent")) if kind == "user" and m.get("displayContent") else parts
        texts = []
        for p in shown:
            if p.get("thought") is True:
                self.skipped["thinking"] += 1
            elif isinstance(p.get("text"), str):
                texts.append(p["text"])
        text = "\n".join(texts).strip()
        if m.get("thoughts"):
            self.skipped["thinking"] += 1
        if text and self._said(kind, text):
            self.add(f"gemini:{sid}:msg:{mid}", "user" if kind == "user" else "assistant",
                     text, ts, self.max_chars)

    def _parts_tools(self, sid: str, mid: str, ts: str | None, parts: list[dict]) -> None:
        """Function calls and responses inside the content parts; other non-text parts counted."""
        for i, p in enumerate(parts):
            call, resp = p.get("functionCall"), p.get("functionResponse")
            if isinstance(call, dict):
                cid = _key(call.get("id")) or f"{mid}#{i}"
                self.add(f"gemini:{sid}:call:{cid}", TOOL_SPEAKER,
                         tool_note(call.get("name"), call.get("args")), ts, self.max_chars)
            elif isinstance(resp, dict):
                cid = _key(resp.get("id")) or f"{mid}#{i}"
                self.add(f"gemini:{sid}:out:{cid}", TOOL_SPEAKER, result_text([p]), ts,
                         TOOL_RESULT_CHARS)
            elif not isinstance(p.get("text"), str):
                self.skipped[f"block:{next(iter(p), 'empty')}"[:40]] += 1

    def _tool_calls(self, sid: str, ts: str | None, calls: list) -> None:
        """A reply's ``toolCalls`` (the CLI's own record): a note per call, its result excerpted."""
        for tc in calls:
            cid = _key(tc.get("id")) if isinstance(tc, dict) else None
            if not cid:
                self.skipped["malformed"] += 1
                continue
            tts = tc.get("timestamp") if isinstance(tc.get("timestamp"), str) else ts
            self.add(f"gemini:{sid}:call:{cid}", TOOL_SPEAKER, tool_note(tc.get("name"), tc.get("args")),
                     tts, self.max_chars)
            res = result_text(tc.get("result")) or (
                tc["resultDisplay"] if isinstance(tc.get("resultDisplay"), str) else "")
            if res.strip():
                self.add(f"gemini:{sid}:out:{cid}", TOOL_SPEAKER, res, tts, TOOL_RESULT_CHARS)

    def _said(self, kind: str, text: str) -> bool:
        """False (and counted) for what the CLI wrote rather than the conversation."""
        if kind == "user" and text.startswith(COMMANDS):
            self.skipped["command"] += 1
        elif kind == "user" and text.startswith(CONTEXT):
            self.skipped["context"] += 1
        elif (kind == "user" and "<state_snapshot>" in text) or text == COMPRESSION_ACK:
            self.skipped["compaction"] += 1
        else:
            return True
        return False


def read(path: str, offset: int, max_chars: int, state: dict,
         max_bytes: int = 32_000_000) -> Chunk:
    """Read the recording at ``path`` on from byte ``offset`` (JSON Lines), or whole again when
    it is the older single JSON document and changed since ``state`` was taken."""
    if path.endswith(".json"):
        return _read_whole(path, offset, max_chars, state)
    chunk = Chunk(end=offset, state={k: state[k] for k in ("sid", "subagent") if k in state})
    reader = _Reader(chunk, max_chars)
    for _, obj in jsonl_objects(path, offset, chunk, max_bytes):
        try:
            reader.record(obj)
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            chunk.skipped["unreadable"] += 1    # counted; the next line is read all the same
    return chunk


def _read_whole(path: str, offset: int, max_chars: int, state: dict) -> Chunk:
    st = os.stat(path)
    sig = [st.st_size, st.st_mtime_ns]
    if state.get("sig") == sig:
        return Chunk(end=offset, state=dict(state))
    if st.st_size > MAX_JSON_BYTES:
        raise ValueError(f"the session file is {st.st_size} bytes; at most {MAX_JSON_BYTES} are read")
    with open(path, "rb") as fh:
        raw = fh.read(MAX_JSON_BYTES + 1)
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not a JSON document ({type(exc).__name__})") from None
    chunk = Chunk(end=len(raw), state={"sig": sig})
    if not isinstance(obj, dict) or not isinstance(obj.get("sessionId"), str):
        raise ValueError("not a Gemini CLI session (no sessionId)")
    _Reader(chunk, max_chars).record({k: v for k, v in obj.items() if k != "type"})
    return chunk


def project_folder(path: str) -> Path | None:
    """The project's folder of a recording: the parent of the ``chats`` folder holding it."""
    for parent in Path(path).resolve().parents:
        if parent.name == "chats":
            return parent.parent
    return None


def head(path: str) -> tuple[str | None, str | None]:
    """The session id a recording names, and the project folder it was recorded in: the
    ``.project_root`` the CLI keeps beside ``chats/``, else the path in ``projects.json`` whose
    short name or sha256 is the project folder's name or the recording's ``projectHash``."""
    chunk = Chunk()
    first: dict = {}
    if path.endswith(".json"):
        try:
            with open(path, "rb") as fh:
                got = json.loads(fh.read(MAX_JSON_BYTES))
            first = got if isinstance(got, dict) else {}
        except (ValueError, RecursionError):
            first = {}
    else:
        first = next((obj for _, obj in jsonl_objects(path, 0, chunk, 1_000_000)), {})
    sid = clean_id(first["sessionId"]) if isinstance(first.get("sessionId"), str) else None
    folder = project_folder(path)
    if folder is None:
        return sid, None
    try:
        root = (folder / ".project_root").read_text(encoding="utf-8").strip()
        if root:
            return sid, root
    except (OSError, UnicodeDecodeError):
        pass
    try:
        projects = json.loads((folder.parent.parent / "projects.json").read_bytes())["projects"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return sid, None
    wanted = {folder.name}
    if isinstance(first.get("projectHash"), str):
        wanted.add(first["projectHash"])
    for root, short in (projects.items() if isinstance(projects, dict) else []):
        if not isinstance(root, str):
            continue
        if (isinstance(short, str) and short in wanted) or hashlib.sha256(
                root.encode("utf-8", "surrogatepass")).hexdigest() in wanted:
            return sid, root
    return sid, None
