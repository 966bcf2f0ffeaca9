"""ChatGPT's ``conversations.json``: a list of conversations, each a tree of message nodes
(``mapping``: id -> ``{message, parent, children}``) whose branch ending at ``current_node`` is
the conversation as the user last saw it. That branch becomes a session (``chatgpt:<id>``); its
user and assistant turns become messages, with their role as speaker, their ``create_time`` and
their message id as ref. System, tool and empty turns are left out.

The tree comes from a file and is not trusted: parents may form a loop, point nowhere or not be
strings; every walk below visits a node at most once, so reading is linear in the file's size.
Without a usable ``current_node`` the deepest leaf is taken (depths memoised, loops cut where
they close).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from .bounds import Deadline, FileRefused, Refusals, finite, show
from .format import MessageRec, SessionRec

TITLE_CHARS = 1_000   # a conversation's title kept in its first message's metadata


class Bad(ValueError):
    """One conversation or message cannot be read; the reason goes into the report."""


def epoch(name: str, t: Any) -> datetime | None:
    """Seconds since 1970 (ChatGPT's times); None, 0 or less: no time."""
    if t is None:
        return None
    if not finite(t):
        raise Bad(f"{name} {show(t)} is not a finite number of seconds")
    if t <= 0:
        return None
    try:
        return datetime.fromtimestamp(t, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        raise Bad(f"{name} {t!r} is out of range (years 1970 to 9999)") from None


def _parent(mapping: dict, key: str) -> str | None:
    node = mapping.get(key)
    p = node.get("parent") if isinstance(node, dict) else None
    return p if isinstance(p, str) and p in mapping else None


def _deepest_leaf(mapping: dict, deadline: Deadline) -> str | None:
    depth: dict[str, int] = {}
    for i, start in enumerate(mapping):
        if i % 4096 == 0:
            deadline.check()
        path: list[str] = []
        on_path: set[str] = set()
        k: str | None = start
        while k is not None and k not in depth and k not in on_path:
            path.append(k)
            on_path.add(k)
            k = _parent(mapping, k)
        d = depth[k] if k is not None and k in depth else -1   # a root, or a loop closing here
        for p in reversed(path):
            d += 1
            depth[p] = d

    def leaf(k: str) -> bool:
        children = mapping[k].get("children") if isinstance(mapping[k], dict) else None
        return not (isinstance(children, list) and children)

    ends = [k for k in mapping if leaf(k)] or list(mapping)
    return max(sorted(ends), key=lambda k: depth.get(k, 0), default=None)


def branch(conv: dict, mapping: dict, deadline: Deadline) -> list[dict]:
    """The nodes from the root to ``current_node`` (else the deepest leaf), root first."""
    node = conv.get("current_node")
    if not (isinstance(node, str) and node in mapping):
        node = _deepest_leaf(mapping, deadline)
    chain: list[dict] = []
    seen: set[str] = set()
    while isinstance(node, str) and node in mapping and node not in seen:
        seen.add(node)
        if isinstance(mapping[node], dict):
            chain.append(mapping[node])
        node = _parent(mapping, node)
    return chain[::-1]


def _text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ""
    return "\n".join(p for p in parts if isinstance(p, str)).strip()


def _turn(node: dict, where: str) -> tuple[str, str, datetime | None, str] | None:
    """(ref, role, time, text) of a user or assistant turn; None for what is left out."""
    m = node.get("message")
    if not isinstance(m, dict):
        return None
    author = m.get("author")
    role = author.get("role") if isinstance(author, dict) else None
    body = _text(m.get("content"))
    if role not in ("user", "assistant") or not body:
        return None
    mid = m.get("id") if m.get("id") is not None else node.get("id")
    if not isinstance(mid, str) or not mid:
        raise Bad(f"{where}: a {role} message without a string id")
    return mid, role, epoch(f"message {show(mid)}: create_time", m.get("create_time")), body


def chatgpt(data: Any, ns: str, refused: Refusals, deadline: Deadline) -> list:
    if not isinstance(data, list):
        raise FileRefused("not a chatgpt conversations.json (expected a list of conversations)")
    if data and not any(isinstance(c, dict) and "mapping" in c for c in data):
        raise FileRefused("not a chatgpt conversations.json (no conversation has a mapping)")
    out: list = []
    seen: set[str] = set()
    for i, c in enumerate(data):
        deadline.check()
        cid = c.get("conversation_id") or c.get("id") if isinstance(c, dict) else None
        where = f"conversation #{i}" + (f" {show(cid)}" if cid is not None else "")
        try:
            if not isinstance(c, dict):
                raise Bad("not an object")
            if not isinstance(cid, str) or not cid.strip():
                raise Bad("no conversation_id (a string)")
            if cid in seen:
                raise Bad("the same conversation_id again (the first was imported)")
            seen.add(cid)
            mapping = c.get("mapping")
            if not isinstance(mapping, dict):
                raise Bad("mapping is not an object of message nodes")
            when = epoch("create_time", c.get("create_time"))
        except Bad as exc:
            refused.add(where, str(exc))
            continue
        sid = f"chatgpt:{cid}"
        title = c.get("title") if isinstance(c.get("title"), str) else None
        msgs = []
        for node in branch(c, mapping, deadline):
            try:
                turn = _turn(node, where)
            except Bad as exc:
                refused.add(where, str(exc), messages=1)
                continue
            if turn is not None:
                msgs.append(turn)
        if not msgs:
            continue
        out.append(SessionRec(type="session", namespace=ns, session_id=sid, session_time=when))
        for k, (mid, role, t, body) in enumerate(msgs):
            meta = {"title": title[:TITLE_CHARS]} if k == 0 and title is not None else None
            out.append(MessageRec(type="message", namespace=ns, session_id=sid, seq=k, ref=mid,
                                  speaker=role, timestamp=t, content=body, metadata=meta))
    return out
