"""Checking an import before anything is written (``transfer/importer.py`` then writes it).

Every record is checked with ``remember``'s own validation, once per message and curated memory,
as the write will see it: a session is written in one ``remember`` call, so what passes here
cannot fail there on a limit (the per-call limits do not apply to an import's session; the file's
size is bounded instead). Forget records are checked like any record (ids, refs and session ids
are bounded, printable Unicode).

*Strict* (a trimem export): the first problem refuses the file, nothing is written.
*Lenient* (another tool's file): a message or curated memory with a problem is refused alone and
named in the report; a curated memory citing a refused message is refused with it.

Every message gets the id it will be stored under: ``stable(namespace, session, ref)`` with a
ref (remember's rule); without one, the id it had where it was exported (so a forget record
naming it holds in every home it travels to), else a stable id of its session, speaker, time,
text and occurrence. Forgotten = named by a forget record of the file or of the target home,
by that id or the file's.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from ..strategies.ids import stable_id
from ..tools.errors import ToolFailure
from .bounds import Deadline, FileRefused, Refusals, show
from .format import CuratedRec, ForgetRec, MessageRec, SessionRec
from ..tools import validate as v
from ..tools.curated import check_curated
from ..tools.remember import Curated, CuratedEpisode, CuratedFact, Message
from ..tools.remember_prep import check_messages

SOURCE_ID = re.compile(r"src_[0-9a-f]{20}")


class ImportError_(FileRefused):
    """The file cannot be imported (nothing was written); the message says why."""


@dataclass
class Session:
    namespace: str
    session_id: str
    session_time: datetime | None = None
    messages: list[MessageRec] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)        # the id each message is stored under
    curated: list[CuratedRec] = field(default_factory=list)


def message_model(m: MessageRec):
    return Message(content=m.content, speaker=m.speaker, ref=m.ref, metadata=m.metadata,
                   timestamp=None if m.timestamp is None else m.timestamp.isoformat())


def curated_model(items: list[CuratedRec]):
    def when(c: CuratedRec):
        return None if c.timestamp is None else c.timestamp.isoformat()

    return Curated(episodes=[CuratedEpisode(title=c.title, summary=c.summary, details=c.details,
                                            timestamp=when(c), refs=c.refs)
                             for c in items if c.kind == "episode"],
                   facts=[CuratedFact(subject=c.subject, relation=c.relation, object=c.object,
                                      context=c.context, timestamp=when(c), refs=c.refs)
                          for c in items if c.kind == "fact"])


def forgotten_in(rt, ns: str, exists: bool) -> set[str]:
    if not exists:
        return set()
    rows = rt.space(ns).derived.rows("audit", eq={"op": "forget"}, columns=["target_ids"])
    return {i for r in rows for i in (r["target_ids"] or [])}


def _where(s: Session, what: str, name: str | None, otherwise: str) -> str:
    return (f"namespace {show(s.namespace)}, session {show(s.session_id)}, {what} "
            + (show(name) if name is not None else otherwise))


def _reason(exc: Exception) -> str:
    return re.sub(r"^(messages\[0\]|curated\.(episodes|facts)\[0\])\.?", "", str(exc)).strip()


class Plan:
    """Everything checked, nothing written."""

    def __init__(self, rt, records: list, strict: bool, refused: Refusals, deadline: Deadline):
        self.rt, self.strict, self.refused, self.deadline = rt, strict, refused, deadline
        self.sessions: dict[tuple[str, str], Session] = {}
        self.forgets: dict[str, list[ForgetRec]] = {}
        self._group(records)
        self.existing = set(rt.store.namespaces())
        names = set(self.forgets) | {ns for ns, _ in self.sessions}
        self.gone = {ns: forgotten_in(rt, ns, ns in self.existing)
                     | {i for f in self.forgets.get(ns, []) for i in f.ids} for ns in names}
        for s in self.sessions.values():
            deadline.check()
            self._messages(s)
        self._curated()

    def problem(self, where: str, reason: str, messages: int = 0, curated: int = 0) -> None:
        if self.strict:
            raise ImportError_(f"{where}: {reason}")
        self.refused.add(where, reason, messages, curated)

    def _group(self, records: list) -> None:
        lim = self.rt.limits
        for k, rec in enumerate(records, 1):
            if k % 1024 == 0:
                self.deadline.check()
            what = f"record #{k} ({rec.type})"
            try:
                ns = v.namespace(rec.namespace, lim)
                if isinstance(rec, ForgetRec):
                    for name in ("ids", "refs", "sessions"):
                        for i, x in enumerate(getattr(rec, name)):
                            v.text_field(f"{name}[{i}]", x, lim, required=True)
                    v.when("at", rec.at)
                    self.forgets.setdefault(ns, []).append(rec)
                    continue
                sid = v.text_field("session_id", rec.session_id, lim, required=True)
            except ToolFailure as exc:
                kind = "forget record" if isinstance(rec, ForgetRec) else what
                self.problem(kind if self.strict else what, str(exc),
                             messages=isinstance(rec, MessageRec), curated=isinstance(rec, CuratedRec))
                continue
            s = self.sessions.setdefault((ns, sid), Session(ns, sid))
            if isinstance(rec, SessionRec):
                s.session_time = rec.session_time or s.session_time
            elif isinstance(rec, MessageRec):
                s.messages.append(rec)
            elif isinstance(rec, CuratedRec):
                s.curated.append(rec)

    def _messages(self, s: Session) -> None:
        s.messages.sort(key=lambda m: m.seq)
        kept, refs, same = [], set(), Counter()
        for m in s.messages:
            try:
                check_messages(self.rt, [message_model(m)], None, whole_session=True)
                if m.id is not None:
                    v.text_field("id", m.id, self.rt.limits, required=True)
                if m.ref is not None and m.ref in refs:
                    raise ToolFailure("its ref is repeated within the session")
            except (ToolFailure, ValueError) as exc:
                self.problem(_where(s, "message", m.ref, f"#{m.seq}"), _reason(exc), messages=1)
                continue
            if m.ref is not None:
                refs.add(m.ref)
                s.ids.append(stable_id("src", s.namespace, s.session_id, m.ref))
            elif m.id is not None and SOURCE_ID.fullmatch(m.id):
                s.ids.append(m.id)
            else:
                key = (m.speaker or "", m.timestamp.isoformat() if m.timestamp else "", m.content)
                same[key] += 1
                s.ids.append(stable_id("src", s.namespace, s.session_id, *key, str(same[key])))
            kept.append(m)
        s.messages = kept

    def is_forgotten(self, s: Session, m: MessageRec, mid: str) -> bool:
        gone = self.gone[s.namespace]
        return mid in gone or (m.id is not None and m.id in gone)

    def curated_forgotten(self, s: Session, c: CuratedRec, mid: str) -> bool:
        gone = self.gone[s.namespace]
        return mid in gone or (c.id is not None and c.id in gone)

    def _curated(self) -> None:
        """Each curated memory checked alone, and its refs: every one must name a message of
        the file (kept, in its namespace) or of the target namespace."""
        in_file: dict[str, dict[str, set[str]]] = {}     # namespace -> ref -> its sessions
        for s in self.sessions.values():
            held = in_file.setdefault(s.namespace, {})
            for m in s.messages:
                if m.ref:
                    held.setdefault(m.ref, set()).add(s.session_id)
        for s in self.sessions.values():
            kept = []
            for c in s.curated:
                try:
                    check_curated(self.rt, curated_model([c]), whole_session=True)
                    if c.id is not None:
                        v.text_field("id", c.id, self.rt.limits, required=True)
                except (ToolFailure, ValueError) as exc:
                    self.problem(_where(s, f"curated {c.kind}", c.id, show(c.subject or c.title)),
                                 _reason(exc), curated=1)
                    continue
                kept.append((s, c))
            s.curated = self._cited(s.namespace, kept, in_file.get(s.namespace, {}))

    def _cited(self, ns: str, items: list[tuple[Session, CuratedRec]],
               in_file: dict[str, set[str]]) -> list:
        """The memories whose every ref names a message, and one session's only when it is
        not the memory's own (``tools/refs.py``: ``remember`` refuses such a memory, so the
        plan refuses it before anything is written)."""
        cited = sorted({r for _, c in items for r in c.refs})
        holders = {r: set(in_file.get(r, ())) for r in cited}
        if cited and ns in self.existing:
            for row in self.rt.space(ns).sources.by_refs(cited):
                holders[row.ref].add(row.session_id)
        out = []
        for s, c in items:
            where = _where(s, f"curated {c.kind}", c.id, show(c.subject or c.title))
            bad = sorted(r for r in set(c.refs) if not holders[r])
            if bad:
                gone = "" if self.strict else " (or only one that was refused)"
                self.problem(where, f"cites refs that name no message{gone}: "
                             f"{', '.join(show(r) for r in bad[:5])}", curated=1)
                continue
            unclear = sorted(r for r in set(c.refs)
                             if s.session_id not in holders[r] and len(holders[r]) > 1)
            if unclear:
                self.problem(where, "cites refs that name messages of several other sessions "
                             f"(it cannot tell which): {', '.join(show(r) for r in unclear[:5])}",
                             curated=1)
                continue
            out.append(c)
        return out
