"""OpenAI Codex CLI's session logs ("rollouts"), read under the shared storage rule.

Codex appends each session to ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``
(``~/.codex`` by default), one JSON object per line: ``{timestamp, type, payload}`` with
``type`` ``session_meta`` (``payload.id``, ``payload.cwd``, ...), ``turn_context``,
``response_item`` (what the model saw and said), ``event_msg`` (the terminal's display log,
which repeats the messages), ``compacted`` and, in newer versions, a few more kinds. Older
versions wrote a flat file: a first line ``{id, timestamp, instructions}``, then each item as
a bare object, and ``{"record_type": "state"}`` lines. docs/capture.md ("Other agent CLIs")
names the source files this follows.

The rule, as for Claude Code: user and assistant text as it is (``input_text`` /
``output_text`` parts of a ``message``); a tool call (``function_call``, ``custom_tool_call``,
``local_shell_call``, ``tool_search_call``, ``web_search_call``) as one line ``[tool NAME]
ARGS``; a tool's output (``*_output``) as a bounded excerpt, both speaker ``tool``;
``reasoning`` never; ``developer`` / ``system`` messages and the context Codex injects as user
messages (``<environment_context>``, ``AGENTS.md`` instructions, ...) skipped and counted, as
are ``event_msg``, ``turn_context``, compaction summaries and every unknown kind.

Refs: items carry no id of their own in most versions, so a ref names the session the item was
first recorded in (the ``id`` of the latest ``session_meta`` line: a forked session's file
repeats its parent's ``session_meta`` and items, which keeps their refs) and then the call id
(``codex:<session>:call:<call_id>``, ``…:out:<call_id>``) or a hash of the message's role and
text with a count of its earlier repeats (``codex:<session>:msg:<hash>``, ``#n`` from the second
on). The repeat counts go on in ``Chunk.state`` with the cursor.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any

from ..strategies.base import TOOL_SPEAKER
from .transcript import TOOL_RESULT_CHARS, Chunk, Entry, clean_id, cut, jsonl_objects, tool_note

# Codex's own list of context it sends as user messages: start and end marker of each
CONTEXT = (("# agents.md instructions for ", "</instructions>"),
           ("<user_instructions>", "</user_instructions>"),
           ("<environment_context>", "</environment_context>"), ("<skill>", "</skill>"),
           ("<user_shell_command>", "</user_shell_command>"),
           ("<turn_aborted>", "</turn_aborted>"),
           ("<subagent_notification>", "</subagent_notification>"),
           ("<additional_context>", "</additional_context>"))
CALLS = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action",
         "tool_search_call": "arguments", "web_search_call": "action"}
OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
SKIPPED = {"reasoning": "reasoning", "compaction": "compaction",
           "compaction_summary": "compaction", "context_compaction": "compaction"}
LEGACY_ITEMS = {"message", "reasoning", *CALLS, *OUTPUTS}
CWD = re.compile(r"<cwd>([^<\n]{1,4096})</cwd>")


def is_context(text: str) -> bool:
    t = text.strip().lower()
    return any(t.startswith(a) and t.endswith(b) for a, b in CONTEXT)


def _ref(state: dict, origin: str, kind: str, key: str) -> str:
    key = clean_id(key, 10**9)
    if len(key) > 100 or kind in ("msg", "item"):
        key = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    if kind in ("call", "out"):
        return f"codex:{origin}:{kind}:{key}"
    seen = state.setdefault("seen", {})
    n = int(seen.get(f"{origin}:{key}", 0))
    seen[f"{origin}:{key}"] = n + 1
    return f"codex:{origin}:{kind}:{key}" + (f"#{n}" if n else "")


def _texts(content: Any, role: str, skipped: Counter) -> str:
    if isinstance(content, str):
        content = [{"type": "input_text", "text": content}]
    if not isinstance(content, list):
        skipped["malformed"] += 1
        return ""
    out = []
    for part in content:
        ptype = part.get("type") if isinstance(part, dict) else None
        if ptype not in ("input_text", "output_text", "text"):
            skipped[f"block:{ptype}"[:40] if isinstance(ptype, str) else "malformed"] += 1
            continue
        text = part.get("text")
        if not isinstance(text, str):
            skipped["malformed"] += 1
        elif role == "user" and is_context(text):
            skipped["context"] += 1
        elif text.strip():
            out.append(text)
    return "\n\n".join(out)


def output_text(out: Any) -> str:
    """A tool output as text: a string (older shell outputs are a JSON string whose ``output``
    is the text), a list of content parts (their text; images left out), or ``{content}``."""
    if isinstance(out, str):
        if out.startswith("{"):
            try:
                obj = json.loads(out)
            except (ValueError, RecursionError):
                return out
            if isinstance(obj, dict) and isinstance(obj.get("output"), str):
                return obj["output"]
        return out
    if isinstance(out, list):
        return "\n".join(p["text"] for p in out if isinstance(p, dict)
                         and isinstance(p.get("text"), str))
    if isinstance(out, dict) and isinstance(out.get("content"), str):
        return out["content"]
    return ""


def _compact(obj: Any) -> str:
    try:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return ""


def _args(raw: Any) -> Any:
    if isinstance(raw, str) and raw[:1] in "{[":
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            return raw
    return raw


def item_entries(it: dict, origin: str, ts: str | None, max_chars: int, state: dict,
                 skipped: Counter) -> list[Entry]:
    """The messages one ``response_item`` payload holds under the rule."""
    kind = it.get("type")
    if not isinstance(kind, str):
        skipped["malformed"] += 1
        return []
    call_id = it.get("call_id") if isinstance(it.get("call_id"), str) and it["call_id"] else None
    if kind == "message":
        role = it.get("role")
        if role not in ("user", "assistant"):
            skipped[f"role:{role}"[:40] if isinstance(role, str) else "malformed"] += 1
            return []
        text = _texts(it.get("content"), role, skipped)
        if not text:
            return []
        ref = _ref(state, origin, "msg", f"{role}\0{text}")
        speaker, text = role, cut(text, max_chars)
    elif kind in CALLS:
        name = it.get("name") if kind in ("function_call", "custom_tool_call") else kind[:-5]
        args = _args(it.get(CALLS[kind]))
        text, speaker = tool_note(name, args), TOOL_SPEAKER
        ref = (_ref(state, origin, "call", call_id) if call_id else
               _ref(state, origin, "item", _compact([kind, name, args])[:4000] or kind))
    elif kind in OUTPUTS:
        text = (output_text(it.get("output")) if kind != "tool_search_output"
                else _compact(it.get("tools")))
        if not call_id:
            skipped["malformed"] += 1
            return []
        ref, speaker, text = _ref(state, origin, "out", call_id), TOOL_SPEAKER, cut(text, TOOL_RESULT_CHARS)
    else:
        skipped[SKIPPED.get(kind, f"item:{kind}"[:40])] += 1
        return []
    if not text.strip():
        skipped["empty"] += 1
        return []
    return [Entry(ref=ref, speaker=speaker, text=text, timestamp=ts, origin=origin)]


def read(path: str, offset: int, max_chars: int, state: dict,
         max_bytes: int = 32_000_000) -> Chunk:
    """Read the rollout at ``path`` from byte ``offset`` to its last complete line; ``state``
    (from the last read) holds the session the next lines belong to and the repeat counts."""
    chunk = Chunk(end=offset, state={"origin": state.get("origin"),
                                     "seen": dict(state.get("seen") or {})})
    for _, obj in jsonl_objects(path, offset, chunk, max_bytes):
        try:
            _line(obj, chunk, max_chars)
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
            chunk.skipped["unreadable"] += 1    # counted; the next line is read all the same
    return chunk


def _line(obj: dict, chunk: Chunk, max_chars: int) -> None:
    """One rollout line: the session it starts, or the messages it holds under the rule."""
    st = chunk.state
    ts = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
    kind, payload = obj.get("type"), obj.get("payload")
    if "payload" not in obj:          # the older flat format
        if "record_type" in obj:
            chunk.skipped["entry:state"] += 1
            return
        if kind is None and isinstance(obj.get("id"), str):
            kind, payload, ts = "session_meta", obj, None
        elif isinstance(kind, str) and kind in LEGACY_ITEMS:
            kind, payload, ts = "response_item", obj, None
    if not isinstance(kind, str) or not isinstance(payload, dict):
        chunk.skipped["malformed" if isinstance(kind, str) else "entry:unknown"] += 1
        return
    if kind == "session_meta":
        if isinstance(payload.get("id"), str) and payload["id"]:
            st["origin"] = clean_id(payload["id"])
            chunk.session_id = chunk.session_id or st["origin"]
        chunk.skipped["entry:session_meta"] += 1
    elif kind == "response_item":
        chunk.entries += item_entries(payload, st.get("origin") or "unknown", ts,
                                      max_chars, st, chunk.skipped)
    else:
        chunk.skipped[f"entry:{kind}"[:40]] += 1


def head(path: str, max_lines: int = 200) -> tuple[str | None, str | None]:
    """The session id and working folder a rollout names at its start (``session_meta``; for
    the older flat format, the ``<cwd>`` of its environment context), or None for either."""
    sid = cwd = None
    chunk = Chunk()
    for n, (_, obj) in enumerate(jsonl_objects(path, 0, chunk, 4_000_000)):
        raw = obj.get("payload")
        payload: dict = raw if isinstance(raw, dict) else obj
        if sid is None and (obj.get("type") == "session_meta" or "payload" not in obj) \
                and isinstance(payload.get("id"), str):
            sid = clean_id(payload["id"])
            cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
        elif cwd is None and payload.get("type") == "message":
            m = CWD.search(_compact(payload.get("content"))[:20000])
            cwd = m.group(1).strip() if m else None
        if (sid and cwd) or n >= max_lines:
            break
    return sid, cwd
