"""A host's transcript, read from where the last capture ended, as the messages to remember.

Claude Code keeps each session as a JSON Lines file (``transcript_path`` in every hook's input;
docs/capture.md gives the sources). Each line is one entry: ``type`` (``user``, ``assistant``,
``system``, ``summary``, ``file-history-snapshot``, ...), ``uuid``, ``timestamp``, ``sessionId``,
``isSidechain``, ``isMeta``, and for the two message types ``message.content``: a string, or a
list of blocks (``text``, ``thinking``, ``redacted_thinking``, ``tool_use``, ``tool_result``,
``image``). One assistant reply with text and tool calls spans several entries, each with its
own ``uuid``.

The rule (docs/capture.md, "What is stored"):

- user and assistant text: stored as it is (speaker ``user`` / ``assistant``), one message per
  entry, its ``uuid`` as the ``ref`` and its ``timestamp`` as the time;
- a tool call: a one-line note, ``[tool NAME] ARGS`` with the arguments as compact JSON cut to
  ``TOOL_ARGS_CHARS`` (speaker ``tool``: it is what the assistant ran, not what it said);
- a tool result: its first ``TOOL_RESULT_CHARS`` characters and how many more there were
  (speaker ``tool``); images and other binary blocks are left out;
- thinking blocks: never stored;
- subagent (sidechain) entries: skipped; the main thread holds the task the subagent was given
  (its tool call) and what it handed back (its tool result);
- meta entries (``isMeta``), local command echoes (``<command-name>``, ``<local-command-...>``),
  compaction summaries (``isCompactSummary``, ``summary`` entries) and every other entry type:
  skipped, as text the host wrote rather than the conversation;
- a message longer than ``max_chars`` keeps its head and says how much was cut.

Reading stops at the last complete line: a host still writing the next one is read next time.
Only this module knows the host's format; what it returns is plain data. The shapes it returns
(``Entry``, ``Chunk``) and the helpers for the shared rule (``cut``, ``tool_note``,
``jsonl_objects``) are those of every host's reader (``capture/codex.py``, ``capture/gemini.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Iterator

from ..strategies.base import TOOL_SPEAKER

TOOL_ARGS_CHARS = 160
TOOL_RESULT_CHARS = 400
MAX_LINE_BYTES = 8_000_000     # a longer line is skipped whole (counted), never parsed
COMMAND_ECHO = ("<command-name>", "<command-message>", "<local-command-", "<command-args>")


@dataclass(frozen=True)
class Entry:
    """One message to remember, taken from one transcript entry (or one block of it)."""

    ref: str
    speaker: str
    text: str
    timestamp: str | None
    # the session that first recorded the entry, when a log repeats another session's entries
    # (a forked session's copy of its parent): a forget there keeps the copy out too
    origin: str | None = None


@dataclass
class Chunk:
    """What one read of a transcript found: the messages, what it skipped and why, and the
    byte offset just past the last complete line it read. ``state`` is what a reader needs
    besides the offset to go on next time (kept with the cursor; empty for Claude Code)."""

    entries: list[Entry] = field(default_factory=list)
    skipped: Counter = field(default_factory=Counter)
    end: int = 0
    session_id: str | None = None
    state: dict = field(default_factory=dict)


def cut(text: str, limit: int) -> str:
    """``text`` stripped, and when longer than ``limit`` its head and how much was cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} [… {len(text) - limit} more characters]"


def clean_id(value: str, limit: int = 200) -> str:
    """An id taken from a log, cut to ``limit`` and storable: a lone surrogate (a JSON
    ``\\ud800``) becomes ``?``."""
    return value[:limit].encode("utf-8", "replace").decode("utf-8")


def tool_note(name: Any, args: Any) -> str:
    """A tool call as one line: ``[tool NAME] ARGS``, the arguments as compact JSON cut to
    ``TOOL_ARGS_CHARS`` (JSON escapes every newline, so the note stays one line)."""
    label = " ".join(name.split())[:80] if isinstance(name, str) else ""
    label = label or "tool"
    try:
        text = json.dumps(args if args is not None else {}, ensure_ascii=False,
                          separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        text = "{}"
    if len(text) > TOOL_ARGS_CHARS:
        text = text[:TOOL_ARGS_CHARS] + "…"
    return f"[tool {label}] {text}"


def jsonl_objects(path: str, offset: int, chunk: Chunk,
                  max_bytes: int = 32_000_000) -> Iterator[tuple[int, dict]]:
    """Each JSON object line of ``path`` from byte ``offset`` to its last complete line (at most
    ``max_bytes``), with the byte offset where the line starts; ``chunk.end`` follows what was
    read. Lines that are not a JSON object, or over ``MAX_LINE_BYTES``, are counted in
    ``chunk.skipped``, never parsed deeper; a complete line longer than ``max_bytes`` is skipped
    alone (the next read goes on after it). A file shorter than ``offset`` was rewritten: it is
    read from the start and ``chunk.state`` is cleared (refs keep anything from being stored
    twice)."""
    chunk.end = offset
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        if size < offset:
            offset = chunk.end = 0
            chunk.state = {}
        fh.seek(offset)
        data = fh.read(min(size - offset, max_bytes))
        last = data.rfind(b"\n")
        if last < 0 and offset + len(data) < size:     # one line fills the whole read
            end = _line_end(fh)
            if end is not None:
                chunk.end = end
                chunk.skipped["too-long"] += 1
    if last < 0:
        return
    pos = 0
    for raw in data[:last + 1].split(b"\n")[:-1]:
        start = offset + pos
        pos += len(raw) + 1
        chunk.end = offset + pos
        if not raw.strip():
            continue
        if len(raw) > MAX_LINE_BYTES:
            chunk.skipped["too-long"] += 1
            continue
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError):
            chunk.skipped["unreadable"] += 1
            continue
        if not isinstance(obj, dict):
            chunk.skipped["unreadable"] += 1
            continue
        yield start, obj


def _line_end(fh: BinaryIO) -> int | None:
    """The offset just past the next newline from where ``fh`` is, or None (no newline yet)."""
    while block := fh.read(1 << 20):
        at = block.find(b"\n")
        if at >= 0:
            return fh.tell() - len(block) + at + 1
    return None


def _result_text(block: dict) -> str:
    body = block.get("content")
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        return "\n".join(b.get("text", "") for b in body
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def entries_of(obj: dict, max_chars: int, skipped: Counter) -> list[Entry]:
    """The messages one transcript entry holds under the module's rule (``skipped`` counts the
    rest by reason)."""
    kind = obj.get("type")
    if kind not in ("user", "assistant"):
        skipped[f"entry:{kind}" if isinstance(kind, str) else "entry:unknown"] += 1
        return []
    if obj.get("isSidechain"):
        skipped["sidechain"] += 1
        return []
    if obj.get("isMeta") or obj.get("isCompactSummary"):
        skipped["meta"] += 1
        return []
    uuid = obj.get("uuid")
    msg = obj.get("message")
    if not isinstance(uuid, str) or not uuid or not isinstance(msg, dict):
        skipped["malformed"] += 1
        return []
    ts = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
    out: list[Entry] = []
    blocks = _blocks(msg.get("content"))
    for i, block in enumerate(blocks):
        btype = block.get("type")
        ref = uuid if len(blocks) == 1 else f"{uuid}#{i}"
        if btype == "text":
            text = str(block.get("text") or "")
            if kind == "user" and text.lstrip().startswith(COMMAND_ECHO):
                skipped["command"] += 1
                continue
            speaker = "user" if kind == "user" else "assistant"
            limit = max_chars
        elif btype == "tool_use":
            text = tool_note(block.get("name"), block.get("input"))
            speaker, limit = TOOL_SPEAKER, max_chars
        elif btype == "tool_result":
            text, speaker, limit = _result_text(block), TOOL_SPEAKER, TOOL_RESULT_CHARS
        elif btype in ("thinking", "redacted_thinking"):
            skipped["thinking"] += 1
            continue
        else:
            skipped[f"block:{btype}"[:40]] += 1
            continue
        text = cut(text, limit)
        if not text:
            skipped["empty"] += 1
            continue
        out.append(Entry(ref=ref, speaker=speaker, text=text, timestamp=ts))
    return out


def read_from(path: str, offset: int, max_chars: int, max_bytes: int = 32_000_000) -> Chunk:
    """Parse the transcript at ``path`` from byte ``offset`` to its last complete line (at most
    ``max_bytes`` per call; the rest is read by the next call). A file shorter than ``offset``
    was rewritten: it is read again from the start (refs keep that from storing anything twice).
    """
    chunk = Chunk(end=offset)
    for _, obj in jsonl_objects(path, offset, chunk, max_bytes):
        if chunk.session_id is None and isinstance(obj.get("sessionId"), str):
            chunk.session_id = obj["sessionId"]
        chunk.entries += entries_of(obj, max_chars, chunk.skipped)
    return chunk
