"""Importers for files users already hold, turned into ``trimem-export`` records (then imported
like any export, through ``remember``, idempotent).

- ``memory-json``: the official MCP memory server's ``memory.json`` (JSON lines of
  ``{"type": "entity", "name", "entityType", "observations": [...]}`` and
  ``{"type": "relation", "from", "to", "relationType"}``). Each entity becomes a session of its
  observations (speaker: the entity's name, ref ``entity:<name>#<k>``); each relation a curated
  fact citing the first observation of both ends (when they have one).
- ``chatgpt``: ChatGPT's ``conversations.json`` (``transfer/chatgpt.py``).
- ``claude``: Claude's export ``conversations.json`` (``uuid``, ``name``, ``created_at``,
  ``chat_messages: [{uuid, sender: human|assistant, text, created_at}]``): one session per
  conversation, ``human`` as speaker ``user``.

Every file is read within :mod:`transfer.bounds`. A file that is not of its kind is refused
whole; inside one, an entity, relation, conversation or message that does not have the shape
its kind documents is refused alone and named in the report (``Refusals``), never guessed at.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from . import FOREIGN  # noqa: F401 - re-exported
from .bounds import Bounds, Deadline, FileRefused, Refusals, load_json, read_text, show
from .chatgpt import Bad, chatgpt
from .format import CuratedRec, MessageRec, SessionRec


def iso(name: str, t: Any) -> datetime | None:
    if t is None or (isinstance(t, str) and not t.strip()):
        return None
    if not isinstance(t, str):
        raise Bad(f"{name} {show(t)} is not an ISO-8601 time")
    try:
        dt = datetime.fromisoformat(t.strip().replace("Z", "+00:00"))
        dt = dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
        dt.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        raise Bad(f"{name} {show(t)} is not an ISO-8601 time of years 0001 to 9999") from None
    return dt


def _rows(text: str, bounds: Bounds, refused: Refusals, deadline: Deadline) -> list[tuple[int, dict]]:
    rows = []
    for no, line in enumerate(text.split("\n"), 1):   # not splitlines: U+2028 is text
        if no % 1024 == 0:
            deadline.check()
        if not line.strip():
            continue
        try:
            if len(line) > bounds.max_line_bytes:
                raise FileRefused(f"the line is longer than {bounds.max_line_bytes} characters")
            row = load_json(line, bounds)
        except FileRefused as exc:
            refused.add(f"line {no}", str(exc))
            continue
        if isinstance(row, dict) and row.get("type") in ("entity", "relation"):
            rows.append((no, row))
        else:
            refused.add(f"line {no}", "neither an entity nor a relation")
    if not rows and refused.listed:
        first = refused.listed[0]
        raise FileRefused(f"not a memory-json file: no line is an entity or a relation "
                          f"({first.record}: {first.reason})")
    return rows


def _entity(row: dict) -> list[str]:
    """The entity's observations; Bad when it does not have the documented shape."""
    if not isinstance(row.get("name"), str) or not row["name"].strip():
        raise Bad("an entity needs a name (a string)")
    if row.get("entityType") is not None and not isinstance(row["entityType"], str):
        raise Bad("entityType is not a string")
    obs = row.get("observations", [])
    if not isinstance(obs, list):
        raise Bad(f"observations is {'a string' if isinstance(obs, str) else type(obs).__name__}, "
                  "not a list of strings")
    return obs


def memory_json(text: str, ns: str, bounds: Bounds, refused: Refusals, deadline: Deadline) -> list:
    out: list = []
    first_ref: dict[str, str] = {}
    relations, names = [], set()
    for no, row in _rows(text, bounds, refused, deadline):
        if row["type"] == "relation":
            relations.append((no, row))
            continue
        where = f"line {no}, entity {show(row.get('name'))}"
        try:
            obs = _entity(row)
            if row["name"] in names:
                raise Bad("the same entity name again (the first was imported)")
        except Bad as exc:
            given = row.get("observations")
            refused.add(where, str(exc), messages=len(given) if isinstance(given, list) else 1)
            continue
        names.add(row["name"])
        kept = []
        for k, o in enumerate(obs):
            if isinstance(o, str):
                if o.strip():
                    kept.append(o)
            else:
                refused.add(f"{where}, observation #{k}", f"not a string but {show(o)}", messages=1)
        sid = f"entity:{row['name']}"
        if not kept:
            continue
        out.append(SessionRec(type="session", namespace=ns, session_id=sid))
        for k, o in enumerate(kept):
            ref = f"{sid}#{k}"
            first_ref.setdefault(row["name"], ref)
            out.append(MessageRec(type="message", namespace=ns, session_id=sid, seq=k, ref=ref,
                                  speaker=row["name"], content=o,
                                  metadata={"entityType": row.get("entityType")}))
    for no, r in relations:
        where = f"line {no}, relation {show(r.get('relationType'))}"
        if not all(isinstance(r.get(k), str) and r[k].strip() for k in ("from", "to", "relationType")):
            refused.add(where, "a relation needs from, to and relationType (strings)", curated=1)
            continue
        refs = [first_ref[n] for n in (r["from"], r["to"]) if n in first_ref]
        if not refs:
            refused.add(where, "neither end is an entity with an observation to cite", curated=1)
            continue
        home = f"entity:{r['from'] if r['from'] in first_ref else r['to']}"
        out.append(CuratedRec(type="curated", namespace=ns, session_id=home, kind="fact",
                              subject=r["from"], relation=r["relationType"], object=r["to"],
                              context="relation imported from memory.json", refs=sorted(set(refs))))
    return out


def _claude_messages(c: dict, where: str, refused: Refusals) -> list[tuple[str, str, Any, str]]:
    msgs, refs = [], set()
    raw = c.get("chat_messages")
    for k, m in enumerate(raw if isinstance(raw, list) else []):
        at = f"{where}, message #{k}"
        try:
            if not isinstance(m, dict):
                raise Bad(f"not an object but {show(m)}")
            if m.get("sender") not in ("human", "assistant"):
                continue
            if not isinstance(m.get("text"), str):
                raise Bad("text is not a string")
            if not m["text"].strip():
                continue
            uid = m.get("uuid")
            if uid is not None and not isinstance(uid, (str, int)):
                raise Bad("uuid is not a string")
            ref = str(uid if uid is not None and uid != "" else len(msgs))
            if ref in refs:
                raise Bad(f"the same uuid {show(ref)} again (the first was imported)")
            when = iso("created_at", m.get("created_at"))
        except Bad as exc:
            refused.add(at, str(exc), messages=1)
            continue
        refs.add(ref)
        msgs.append((ref, "user" if m["sender"] == "human" else "assistant", when, m["text"]))
    return msgs


def claude(data: Any, ns: str, refused: Refusals, deadline: Deadline) -> list:
    if not isinstance(data, list):
        raise FileRefused("not a claude conversations.json (expected a list of conversations)")
    if data and not any(isinstance(c, dict) and "chat_messages" in c for c in data):
        raise FileRefused("not a claude conversations.json (no conversation has chat_messages)")
    out: list = []
    seen: set[str] = set()
    for i, c in enumerate(data):
        deadline.check()
        uid = c.get("uuid") if isinstance(c, dict) else None
        where = f"conversation #{i}" + (f" {show(uid)}" if uid is not None else "")
        try:
            if not isinstance(c, dict):
                raise Bad("not an object")
            if not isinstance(uid, str) or not uid.strip():
                raise Bad("no uuid (a string)")
            if uid in seen:
                raise Bad("the same uuid again (the first was imported)")
            seen.add(uid)
            when = iso("created_at", c.get("created_at"))
        except Bad as exc:
            refused.add(where, str(exc))
            continue
        msgs = _claude_messages(c, where, refused)
        if not msgs:
            continue
        sid = f"claude:{uid}"
        title = c.get("name") if isinstance(c.get("name"), str) else None
        out.append(SessionRec(type="session", namespace=ns, session_id=sid, session_time=when))
        for k, (ref, speaker, t, body) in enumerate(msgs):
            meta = {"title": title[:1_000]} if k == 0 and title is not None else None
            out.append(MessageRec(type="message", namespace=ns, session_id=sid, seq=k, ref=ref,
                                  speaker=speaker, timestamp=t, content=body, metadata=meta))
    return out


def read_foreign(kind: str, path: Path, namespace: str, bounds: Bounds, refused: Refusals,
                 deadline: Deadline) -> list:
    """The records of another tool's file (:class:`FileRefused` when it cannot be read)."""
    text = read_text(path, bounds)
    if kind == "memory-json":
        return memory_json(text, namespace, bounds, refused, deadline)
    data = load_json(text, bounds)
    deadline.check()
    if kind == "chatgpt":
        return chatgpt(data, namespace, refused, deadline)
    if kind == "claude":
        return claude(data, namespace, refused, deadline)
    raise FileRefused(f"unknown kind {kind!r} (known: {', '.join(FOREIGN)})")
