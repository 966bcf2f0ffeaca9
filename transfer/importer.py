"""Import ``trimem-export`` records through the ``remember`` code path.

Two phases. *Plan* (``transfer/plan.py``) reads nothing but the records and the target's existing
rows: every message and curated memory is checked with remember's own validation. *Write* then
calls ``remember`` once per session (the whole session in one call, so its messages are one
commit: a session is imported whole or not at all), under an intent recorded beside the memory
(``transfer/journal.py``) that the next import or export undoes if the process died mid-write.

Idempotent: a message whose id the target's session holds is skipped (with a ref its id is
``stable(namespace, session, ref)``, remember's own rule; without one, the id the plan gave it),
as is one without a ref when its session already holds the same speaker, time and text. A
curated memory has a stable id (namespace, session, text, refs): stored once. Forgotten stays
forgotten: a message or curated memory named by a forget record of the file or of the target is
not imported, nor a curated memory citing a forgotten message.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import TYPE_CHECKING, Callable

from pydantic import BaseModel, Field

from .bounds import Deadline, Refusal, Refusals
from .format import ForgetRec
from .plan import ImportError_, Plan, Session, curated_model, forgotten_in, message_model
from ..tools.curated import check_curated, memory_id
from ..tools.remember import remember_session
from .journal import Journal

if TYPE_CHECKING:
    from ..storage.rows import Source

Progress = Callable[[int, int, str], None]
__all__ = ["ImportError_", "ImportReport", "import_records", "report_text", "retarget"]


class ImportReport(BaseModel):
    namespaces: list[str] = Field(default_factory=list)
    sessions: int = 0
    messages_stored: int = 0
    messages_already_stored: int = 0
    messages_forgotten: int = 0
    messages_refused: int = 0
    curated_stored: int = 0
    curated_already_stored: int = 0
    curated_forgotten: int = 0
    curated_skipped: int = 0
    curated_refused: int = 0
    forget_records_added: int = 0
    refused: list[Refusal] = Field(default_factory=list, description="what was refused and "
                                   "why (the first 100; the counts above hold them all)")
    notes: list[str] = Field(default_factory=list)
    error: str | None = Field(default=None, description="why the file was refused whole (then "
                              "nothing was imported)")


def import_records(rt, records: list, progress: Progress | None = None, *, strict: bool = True,
                   refused: Refusals | None = None, deadline: Deadline | None = None) -> ImportReport:
    """Check all of ``records``, then write them through ``remember``. ``strict``: any bad
    record refuses the file (:class:`ImportError_`, nothing written); otherwise a bad message or
    curated memory is refused alone and listed in the report (``refused`` may already hold the
    refusals of reading the file)."""
    refused = refused if refused is not None else Refusals()
    plan = Plan(rt, records, strict, refused, deadline or Deadline(math.inf))
    report = ImportReport(namespaces=sorted({ns for ns, _ in plan.sessions} | set(plan.forgets)))
    total = sum(len(s.messages) for s in plan.sessions.values())
    done = 0
    journal = Journal.of(rt)
    # refs of sessions not written yet: a curated memory citing one (a fact linking this
    # session to a later one) waits until every session's messages are in
    pending = {(s.namespace, m.ref) for s in plan.sessions.values() for m in s.messages if m.ref}
    later: list[tuple[Session, list]] = []
    for s in plan.sessions.values():
        pending -= {(s.namespace, m.ref) for m in s.messages if m.ref}
        wait = [c for c in s.curated if any((s.namespace, r) in pending for r in c.refs)]
        if wait:
            later.append((s, wait))
        done += len(s.messages)
        _write_session(rt, plan, s, [c for c in s.curated if c not in wait], report, journal)
        report.sessions += 1
        if progress:
            progress(done, total, f"{s.namespace}: {s.session_id}")
    for s, wait in later:
        _write_session(rt, plan, s, wait, report, journal, messages=False)
    for ns, fs in plan.forgets.items():
        report.forget_records_added += _import_forgets(rt, ns, fs, plan, report)
    report.messages_refused, report.curated_refused = refused.messages, refused.curated
    report.refused = refused.listed
    if refused.total > len(refused.listed):
        report.notes.append(f"{refused.total} records refused; the first {len(refused.listed)} "
                            "are listed")
    return report


def _new_messages(plan: Plan, s: Session, have: list[Source], report: ImportReport):
    """(messages to send, their ids): the session's, less the forgotten and the stored."""
    have_ids = {r.id for r in have}
    have_plain = Counter((r.speaker, r.timestamp, r.text) for r in have if not r.ref)
    send, ids = [], []
    for m, mid in zip(s.messages, s.ids):
        key = (m.speaker, m.timestamp or None, m.content)
        if plan.is_forgotten(s, m, mid):
            report.messages_forgotten += 1
        elif mid in have_ids:
            report.messages_already_stored += 1
        elif m.ref is None and have_plain[key] > 0:
            have_plain[key] -= 1
            report.messages_already_stored += 1
        else:
            send.append(m)
            ids.append(mid)
    return send, ids


def _curated_to_write(rt, plan: Plan, s: Session, curated: list, report: ImportReport,
                      exists: bool) -> tuple[list, list[str]]:
    gone_refs = {m.ref for m, mid in zip(s.messages, s.ids) if m.ref and plan.is_forgotten(s, m, mid)}
    keep = [c for c in curated if not gone_refs.intersection(c.refs)]
    report.curated_skipped += len(curated) - len(keep)
    if not keep:
        return [], []
    checked = check_curated(rt, curated_model(keep), whole_session=True)
    ordered = [c for c in keep if c.kind == "episode"] + [c for c in keep if c.kind == "fact"]
    ids = [memory_id(s.namespace, s.session_id, m) for m in checked.episodes + checked.facts]
    stored = {m.id for m in rt.space(s.namespace).memories.get(ids)} if exists else set()
    out, out_ids = [], []
    for c, mid in zip(ordered, ids):
        if plan.curated_forgotten(s, c, mid):
            report.curated_forgotten += 1
        elif mid in stored:
            report.curated_already_stored += 1
        else:
            out.append(c)
            out_ids.append(mid)
    return out, out_ids


def _write_session(rt, plan: Plan, s: Session, curated: list, report: ImportReport, journal,
                   messages: bool = True) -> None:
    ns, sid = s.namespace, s.session_id
    exists = ns in plan.existing
    space = rt.space(ns)
    have = space.sources.by_session(sid) if exists else []
    send, ids = _new_messages(plan, s, have, report) if messages else ([], [])
    keep, keep_ids = _curated_to_write(rt, plan, s, curated, report, exists)
    if not send and not keep:
        return
    carried = not send
    if carried:   # the memories need a message to travel with: one the session holds
        held = {r.id for r in (have if messages else space.sources.by_session(sid))}
        carrier = next(((m, i) for m, i in zip(s.messages, s.ids) if i in held), None)
        if carrier is None:
            report.curated_skipped += len(keep)
            report.notes.append(f"session {sid!r}: {len(keep)} curated memories cite no message "
                                "this home holds in the session; skipped")
            return
        send, ids = [carrier[0]], [carrier[1]]
    stime = None if s.session_time is None else s.session_time.isoformat()
    with journal.intent(space, sid, [] if carried else ids, keep_ids):
        out, memory_ids = remember_session(
            rt, [message_model(m) for m in send], sid, stime, ns,
            curated_model(keep) if keep else None, whole_session=True,
            keep_ids=[i if m.ref is None else None for m, i in zip(send, ids)])
    report.messages_stored += out.stored
    report.messages_already_stored += len(send) - out.stored - carried   # a carrier was counted
    report.curated_stored += len(memory_ids)
    report.curated_already_stored += len(keep) - len(memory_ids)
    plan.existing.add(ns)


def _import_forgets(rt, ns: str, forgets: list[ForgetRec], plan: Plan, report: ImportReport) -> int:
    known = forgotten_in(rt, ns, ns in plan.existing)
    added = 0
    named: set[str] = set()
    for f in forgets:
        ids = [i for i in f.ids if i not in known]
        if not ids:
            continue
        rt.space(ns).log.audit("forget", ids, {"imported": True, "refs": f.refs, "sessions": f.sessions,
                                           "at": None if f.at is None else f.at.isoformat(),
                                           "sources": len(ids)})
        known.update(ids)
        named.update(ids)
        added += 1
    held = [r.id for r in rt.space(ns).sources.get(sorted(named))] if named and \
        ns in rt.store.namespaces() else []
    if held:
        report.notes.append(f"namespace {ns!r}: {len(held)} messages named by the file's forget "
                            f"records are stored here; an import does not delete: forget them "
                            f"(ids {held[:5]})")
    return added


def retarget(records: list, namespace: str) -> list:
    """``records`` moved into ``namespace`` (``--namespace``: a file of one namespace only)."""
    names = sorted({r.namespace for r in records})
    if len(names) > 1:
        raise ImportError_(f"the file holds {len(names)} namespaces ({', '.join(names[:5])}): "
                           "--namespace moves the records of a file of one namespace")
    return [r.model_copy(update={"namespace": namespace}) for r in records]


def report_text(r: ImportReport) -> str:
    return json.dumps(r.model_dump(), indent=2, ensure_ascii=False)

