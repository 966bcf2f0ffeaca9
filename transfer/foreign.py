"""Importers for files users already hold, turned into ``trimem-export`` records (then imported
like any export: validated whole, idempotent, through ``remember``).

- ``memory-json``: the official MCP memory server's ``memory.json`` (JSON lines of
  ``{"type": "entity", "name", "entityType", "observations": [...]}`` and
  ``{"type": "relation", "from", "to", "relationType"}``). Each entity becomes a session of its
  observations (speaker: the entity's name, ref ``entity:<name>#<k>``); each relation a curated
  fact citing the first observation of both ends (when they have one).
- ``chatgpt``: ChatGPT's ``conversations.json`` (a list of conversations with ``title``,
  ``create_time``, ``mapping`` of nodes ``{message: {author: {role}, content: {parts}, create_time},
  parent, children}``): the branch ending at ``current_node`` (else the longest) becomes a
  session; user / assistant turns keep their role as speaker and their time; system and tool
  turns and empty ones are left out.
- ``claude``: Claude's export ``conversations.json`` (``uuid``, ``name``, ``created_at``,
  ``chat_messages: [{uuid, sender: human|assistant, text, created_at}]``): one session per
  conversation, ``human`` as speaker ``user``.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import FOREIGN  # noqa: F401 - re-exported
from .format import CuratedRec, MessageRec, SessionRec


def _epoch(t: Any) -> datetime | None:
    if isinstance(t, (int, float)) and t > 0:
        return datetime.fromtimestamp(t, tz=timezone.utc)
    return None


def _iso(t: Any) -> datetime | None:
    if not isinstance(t, str) or not t.strip():
        return None
    try:
        dt = datetime.fromisoformat(t.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"{t!r} is not an ISO-8601 time") from exc
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def memory_json(text: str, ns: str) -> list:
    entities, relations = [], []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {no}: not JSON ({exc.msg})") from exc
        kind = row.get("type") if isinstance(row, dict) else None
        if kind == "entity" and isinstance(row.get("name"), str):
            entities.append(row)
        elif kind == "relation" and all(isinstance(row.get(k), str)
                                        for k in ("from", "to", "relationType")):
            relations.append(row)
        else:
            raise ValueError(f"line {no}: neither an entity nor a relation")
    out: list = []
    first_ref: dict[str, str] = {}
    for e in entities:
        sid = f"entity:{e['name']}"
        obs = [o for o in e.get("observations") or [] if isinstance(o, str) and o.strip()]
        if not obs:
            continue
        out.append(SessionRec(type="session", namespace=ns, session_id=sid))
        for k, o in enumerate(obs):
            ref = f"{sid}#{k}"
            first_ref.setdefault(e["name"], ref)
            out.append(MessageRec(type="message", namespace=ns, session_id=sid, seq=k, ref=ref,
                                  speaker=e["name"], content=o,
                                  metadata={"entityType": e.get("entityType")}))
    for r in relations:
        refs = [first_ref[n] for n in (r["from"], r["to"]) if n in first_ref]
        if not refs:
            continue   # a fact must cite a message: both ends have no observation
        home = f"entity:{r['from'] if r['from'] in first_ref else r['to']}"
        out.append(CuratedRec(type="curated", namespace=ns, session_id=home, kind="fact",
                              subject=r["from"], relation=r["relationType"], object=r["to"],
                              context="relation imported from memory.json", refs=sorted(set(refs))))
    return out


def _parts(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts") or []
    return "\n".join(p for p in parts if isinstance(p, str)).strip()


def _branch(conv: dict) -> list[dict]:
    mapping = conv.get("mapping") or {}
    node = conv.get("current_node")
    if node not in mapping:   # no current node: the deepest leaf
        def depth(n):
            d = 0
            while n in mapping and mapping[n].get("parent"):
                n, d = mapping[n]["parent"], d + 1
            return d
        leaves = [k for k, v in mapping.items() if not v.get("children")]
        node = max(sorted(leaves), key=depth, default=None)
    chain, seen = [], set()
    while node in mapping and node not in seen:
        seen.add(node)
        chain.append(mapping[node])
        node = mapping[node].get("parent")
    return chain[::-1]


def chatgpt(text: str, ns: str) -> list:
    convs = json.loads(text)
    if not isinstance(convs, list):
        raise ValueError("expected a list of conversations")
    out: list = []
    for c in convs:
        sid = f"chatgpt:{c.get('conversation_id') or c.get('id') or c.get('title')}"
        msgs = []
        for node in _branch(c):
            m = node.get("message") or {}
            role = (m.get("author") or {}).get("role")
            body = _parts(m.get("content"))
            if role in ("user", "assistant") and body:
                msgs.append((m.get("id") or node.get("id"), role, _epoch(m.get("create_time")), body))
        if not msgs:
            continue
        out.append(SessionRec(type="session", namespace=ns, session_id=sid,
                              session_time=_epoch(c.get("create_time"))))
        for k, (mid, role, when, body) in enumerate(msgs):
            out.append(MessageRec(type="message", namespace=ns, session_id=sid, seq=k,
                                  ref=str(mid), speaker=role, timestamp=when, content=body,
                                  metadata={"title": c.get("title")} if k == 0 else None))
    return out


def claude(text: str, ns: str) -> list:
    convs = json.loads(text)
    if not isinstance(convs, list):
        raise ValueError("expected a list of conversations")
    out: list = []
    for c in convs:
        sid = f"claude:{c.get('uuid')}"
        msgs = [m for m in c.get("chat_messages") or []
                if m.get("sender") in ("human", "assistant") and str(m.get("text") or "").strip()]
        if not msgs:
            continue
        out.append(SessionRec(type="session", namespace=ns, session_id=sid,
                              session_time=_iso(c.get("created_at"))))
        for k, m in enumerate(msgs):
            out.append(MessageRec(type="message", namespace=ns, session_id=sid, seq=k,
                                  ref=str(m.get("uuid") or k),
                                  speaker="user" if m["sender"] == "human" else "assistant",
                                  timestamp=_iso(m.get("created_at")), content=m["text"],
                                  metadata={"title": c.get("name")} if k == 0 else None))
    return out


def read_foreign(kind: str, path: Path, namespace: str) -> list:
    text = path.read_text(encoding="utf-8")
    try:
        return {"memory-json": memory_json, "chatgpt": chatgpt, "claude": claude}[kind](text, namespace)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a {kind} file ({type(exc).__name__}: {exc})") from exc
