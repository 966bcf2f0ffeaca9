"""Import ``trimem-export`` records through the ``remember`` code path.

Two phases. *Plan* reads nothing but the file and the target's existing rows: every message and
curated memory is checked with remember's own validation and limits, so a bad record anywhere
rejects the whole file before the first write. *Write* then calls ``tools.remember.remember``
per session (in chunks of its message limit), so embedding, dedup, curation and the audit log
are exactly those of the tool.

Idempotent: a message whose ``(session, ref)`` the target holds is skipped (remember's own rule);
a message without a ref is skipped when its session already holds one with the same speaker,
time and text. A curated memory has a stable id (namespace, session, text, refs), so it is
stored once. Forgotten stays forgotten: a message whose id appears in a forget record, of the
file or of the target, is not imported, nor a curated memory citing it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from pydantic import BaseModel, Field

from ..tools.errors import ToolFailure
from .format import CuratedRec, ForgetRec, MessageRec, SessionRec

Progress = Callable[[int, int, str], None]


class ImportReport(BaseModel):
    namespaces: list[str] = Field(default_factory=list)
    sessions: int = 0
    messages_stored: int = 0
    messages_already_stored: int = 0
    messages_forgotten: int = 0
    curated_stored: int = 0
    curated_already_stored: int = 0
    curated_skipped: int = 0
    forget_records_added: int = 0
    notes: list[str] = Field(default_factory=list)


class ImportError_(ValueError):
    """The file cannot be imported (nothing was written); the message says why."""


@dataclass
class _Session:
    namespace: str
    session_id: str
    session_time: object = None
    messages: list[MessageRec] = field(default_factory=list)
    curated: list[CuratedRec] = field(default_factory=list)


def _iso(t) -> str | None:
    return None if t is None else t.isoformat()


def _message(m: MessageRec):
    from ..tools.remember import Message

    return Message(content=m.content, speaker=m.speaker, timestamp=_iso(m.timestamp), ref=m.ref,
                   metadata=m.metadata)


def _curated(items: list[CuratedRec]):
    from ..tools.remember import Curated, CuratedEpisode, CuratedFact

    eps = [CuratedEpisode(title=c.title, summary=c.summary, details=c.details,
                          timestamp=_iso(c.timestamp), refs=c.refs)
           for c in items if c.kind == "episode"]
    facts = [CuratedFact(subject=c.subject, relation=c.relation, object=c.object,
                         context=c.context, timestamp=_iso(c.timestamp), refs=c.refs)
             for c in items if c.kind == "fact"]
    return Curated(episodes=eps, facts=facts)


def _chunks(items: list, n: int) -> list[list]:
    return [items[i:i + n] for i in range(0, len(items), n)] or [[]]


def _forgotten_in_target(rt, ns: str, exists: bool) -> set[str]:
    if not exists:
        return set()
    rows = rt.space(ns).rows("audit", eq={"op": "forget"}, columns=["target_ids"])
    return {i for r in rows for i in (r["target_ids"] or [])}


class Plan:
    """Everything checked, nothing written."""

    def __init__(self, rt, records: list):
        from ..tools import validate as v

        self.rt = rt
        self.sessions: dict[tuple[str, str], _Session] = {}
        self.forgets: dict[str, list[ForgetRec]] = {}
        lim = rt.limits
        try:
            for k, rec in enumerate(records, 2):  # noqa: B007 (the except reads k: the header is line 1)
                ns = v.namespace(rec.namespace, lim)
                if isinstance(rec, ForgetRec):
                    self.forgets.setdefault(ns, []).append(rec)
                    continue
                sid = v.text_field("session_id", rec.session_id, lim, required=True)
                s = self.sessions.setdefault((ns, sid), _Session(ns, sid))
                if isinstance(rec, SessionRec):
                    s.session_time = rec.session_time or s.session_time
                elif isinstance(rec, MessageRec):
                    s.messages.append(rec)
                else:
                    s.curated.append(rec)
        except ToolFailure as exc:
            raise ImportError_(f"line {k}: {exc}") from exc
        self.existing = set(rt.store.namespaces())
        self.forgotten = {ns: _forgotten_in_target(rt, ns, ns in self.existing)
                          | {i for f in fs for i in f.ids} for ns, fs in self.forgets.items()}
        for ns in {ns for ns, _ in self.sessions} - set(self.forgotten):
            self.forgotten[ns] = _forgotten_in_target(rt, ns, ns in self.existing)
        self._check()

    def is_forgotten(self, s: _Session, m: MessageRec) -> bool:
        from ..tools.remember import stable_id

        gone = self.forgotten[s.namespace]
        return bool(gone) and ((m.id is not None and m.id in gone) or (
            m.ref is not None and stable_id("src", s.namespace, s.session_id, m.ref) in gone))

    def _check(self) -> None:
        from ..tools.curated import check_curated
        from ..tools.remember import _check_messages

        lim = self.rt.limits
        file_refs: dict[str, set[str]] = {}
        for (ns, sid), s in self.sessions.items():
            s.messages.sort(key=lambda m: m.seq)
            where = f"namespace {ns!r}, session {sid!r}"
            refs = [m.ref for m in s.messages if m.ref is not None]
            if len(refs) != len(set(refs)):
                dup = sorted(r for r, n in Counter(refs).items() if n > 1)[:5]
                raise ImportError_(f"{where}: refs repeated within the session: {dup}")
            try:
                for chunk in _chunks(s.messages, lim.max_messages):
                    if chunk:
                        _check_messages(self.rt, [_message(m) for m in chunk], None)
                for chunk in _chunks(s.curated, lim.max_curated_items):
                    check_curated(self.rt, _curated(chunk))
            except (ToolFailure, ValueError) as exc:
                raise ImportError_(f"{where}: {exc}") from exc
            file_refs.setdefault(ns, set()).update(
                m.ref for m in s.messages if m.ref and not self.is_forgotten(s, m))
        for (ns, sid), s in self.sessions.items():
            cited = {r for c in s.curated for r in c.refs} - file_refs.get(ns, set())
            if cited and ns in self.existing:
                cited -= {r["ref"] for r in self.rt.space(ns).sources_by_refs(sorted(cited))}
            gone = self._forgotten_refs(s)
            bad = sorted(cited - gone)
            if bad:
                raise ImportError_(f"namespace {ns!r}, session {sid!r}: curated memories cite "
                                   f"refs that name no message: {bad[:10]}")

    def _forgotten_refs(self, s: _Session) -> set[str]:
        return {m.ref for m in s.messages if m.ref and self.is_forgotten(s, m)}


def import_records(rt, records: list, progress: Progress | None = None) -> ImportReport:
    """Validate all of ``records`` (:class:`ImportError_` and nothing written if one is bad),
    then write them through ``remember``."""
    plan = Plan(rt, records)
    report = ImportReport(namespaces=sorted({ns for ns, _ in plan.sessions} | set(plan.forgets)))
    total = sum(len(s.messages) for s in plan.sessions.values())
    done = 0
    # refs of sessions not imported yet: a curated memory citing one (a fact linking this
    # session to a later one) waits until every session's messages are in
    pending = {(s.namespace, m.ref) for s in plan.sessions.values() for m in s.messages if m.ref}
    later: list[tuple[_Session, list[CuratedRec]]] = []
    for s in plan.sessions.values():
        pending -= {(s.namespace, m.ref) for m in s.messages if m.ref}
        wait = [c for c in s.curated if any((s.namespace, r) in pending for r in c.refs)]
        if wait:
            later.append((s, wait))
        done += len(s.messages)
        _import_session(rt, plan, s, [c for c in s.curated if c not in wait], report)
        report.sessions += 1
        if progress:
            progress(done, total, f"{s.namespace}: {s.session_id}")
    for s, wait in later:
        _import_session(rt, plan, s, wait, report, messages=False)
    for ns, fs in plan.forgets.items():
        report.forget_records_added += _import_forgets(rt, ns, fs, plan)
    return report


def _import_session(rt, plan: Plan, s: _Session, curated: list[CuratedRec],
                    report: ImportReport, messages: bool = True) -> None:
    from ..tools.curated import check_curated
    from ..tools.remember import remember, stable_id

    ns, sid = s.namespace, s.session_id
    exists = ns in plan.existing
    space = rt.space(ns)
    have = space.sources_by_session(sid) if exists else []
    have_refs = {r["ref"] for r in have if r["ref"]}
    have_plain = Counter((r["speaker"], r["timestamp"], r["text"]) for r in have if not r["ref"])
    new = []
    for m in (s.messages if messages else []):
        if plan.is_forgotten(s, m):
            report.messages_forgotten += 1
        elif m.ref is not None and m.ref in have_refs:
            report.messages_already_stored += 1
        elif m.ref is None and have_plain[(m.speaker, m.timestamp, m.content)] > 0:
            have_plain[(m.speaker, m.timestamp, m.content)] -= 1
            report.messages_already_stored += 1
        else:
            new.append(m)
    gone_refs = plan._forgotten_refs(s)
    keep = [c for c in curated if not gone_refs.intersection(c.refs)]
    report.curated_skipped += len(curated) - len(keep)
    if keep:
        cplan = check_curated(rt, _curated(keep))
        ids = [stable_id("epi" if m["kind"] == "episode" else "fct", ns, sid, m["text"], *m["refs"])
               for m in cplan.episodes + cplan.facts]
        stored = {m["id"] for m in space.get_memories(ids)} if exists else set()
        ordered = ([c for c in keep if c.kind == "episode"] + [c for c in keep if c.kind == "fact"])
        keep = [c for c, i in zip(ordered, ids) if i not in stored]
        report.curated_already_stored += len(ids) - len(keep)
    if not new and keep:
        if not messages:   # the messages went in a moment ago
            have_refs = {r["ref"] for r in space.sources_by_session(sid) if r["ref"]}
        carrier = next((m for m in s.messages if m.ref in have_refs), None)
        if carrier is None:
            report.curated_skipped += len(keep)
            report.notes.append(f"session {sid!r}: {len(keep)} curated memories need a message "
                                "with a ref to travel with; skipped")
            return
        new = [carrier]            # already stored: remember stores 0 messages, the memories
    stime = _iso(s.session_time)
    chunks = _chunks(new, rt.limits.max_messages)
    for k, chunk in enumerate(chunks):
        if not chunk:
            continue
        cur = _curated(keep) if keep and k == len(chunks) - 1 else None
        out = remember(rt, [_message(m) for m in chunk], sid, stime, ns, cur)
        report.messages_stored += out.stored
        if cur is not None:
            report.curated_stored += len(keep)
    plan.existing.add(ns)


def _import_forgets(rt, ns: str, forgets: list[ForgetRec], plan: Plan) -> int:
    known = _forgotten_in_target(rt, ns, ns in plan.existing)
    added = 0
    for f in forgets:
        ids = [i for i in f.ids if i not in known]
        if not ids:
            continue
        rt.space(ns).audit("forget", ids, {"imported": True, "refs": f.refs,
                                           "sessions": f.sessions,
                                           "at": _iso(f.at), "sources": len(ids)})
        known.update(ids)
        added += 1
    return added


def report_text(r: ImportReport) -> str:
    return json.dumps(r.model_dump(), indent=2, ensure_ascii=False)
