"""Write namespaces out as ``trimem-export`` records (docs/export-format.md).

What a user owns is exported: sessions, every message (ref, speaker, timestamp, metadata), the
memories the host curated (``remember(curated=...)``) and the forget records. Memories trimem
derived itself (heuristic or LLM curation, consolidation, the strategies' tables) are not: they
are rebuilt from the messages by curation after an import, so an export never carries a stale
copy of something the messages already determine.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable, Iterator, Literal, cast

from ..storage.rows import Session
from .format import VERSION, CuratedRec, ForgetRec, Header, MessageRec, SessionRec
from .. import __version__

if TYPE_CHECKING:
    from ..storage.rows import Memory, Source
    from ..storage.space import Space

Progress = Callable[[int, int, str], None]
CURATED_KINDS = ("episode", "fact")


def _sessions_in_order(space: Space) -> list[Session]:
    rows = [s for s in space.sessions.all() if s.namespace == space.namespace]
    far = datetime.max.replace(tzinfo=timezone.utc)
    return sorted(rows, key=lambda s: (s.session_time or s.first_ts or far, s.session_id))


def namespace_records(space: Space) -> Iterator:
    """Every record of one namespace: sessions (in time order) each followed by its messages
    (in order) and its curated memories, then the forget records."""
    ns = space.namespace
    by_session: dict[str, list[Source]] = {}
    for r in space.sources.all():
        by_session.setdefault(r.session_id, []).append(r)
    curated: dict[str | None, list[Memory]] = {}
    for kind in CURATED_KINDS:
        for m in space.memories.of_kind(kind, status=None):
            if m.origin == "host":
                curated.setdefault(m.session_id, []).append(m)
    sessions = _sessions_in_order(space)
    listed = {s.session_id for s in sessions}
    # a session row is written before its messages: a crash between them leaves messages
    # whose row is the only thing missing; they are exported too, as a session without a time
    sessions += [Session(sid) for sid in sorted(by_session) if sid not in listed]
    for s in sessions:
        sid = s.session_id
        msgs = sorted(by_session.get(sid, []), key=lambda r: r.seq)
        if not msgs:
            continue
        yield SessionRec(type="session", namespace=ns, session_id=sid,
                         session_time=s.session_time)
        for r in msgs:
            yield MessageRec(type="message", namespace=ns, session_id=sid, seq=r.seq,
                             id=r.id, ref=r.ref, speaker=r.speaker,
                             timestamp=r.timestamp, content=r.text, metadata=r.metadata)
        for m in sorted(curated.get(sid, []), key=lambda m: m.id):
            yield CuratedRec(type="curated", namespace=ns, session_id=sid,
                             kind=cast(Literal["episode", "fact"], m.kind),   # CURATED_KINDS
                             id=m.id, timestamp=m.timestamp, refs=list(m.refs or []),
                             **{k: v for k, v in m.body.items()
                                if k in CuratedRec.model_fields and isinstance(v, str)})
    for f in forget_records(space):
        yield f


def forget_records(space: Space) -> list[ForgetRec]:
    rows = space.derived.rows("audit", eq={"op": "forget"}, columns=["at", "target_ids", "detail"])
    out = []
    for r in sorted(rows, key=lambda r: r["at"]):
        detail = json.loads(r["detail"] or "{}")
        out.append(ForgetRec(type="forget", namespace=space.namespace, at=r["at"],
                             ids=list(r["target_ids"] or []), refs=list(detail.get("refs") or []),
                             sessions=list(detail.get("sessions") or [])))
    return out


def export_records(rt, namespaces: list[str], progress: Progress | None = None):
    """(header, records) for ``namespaces`` (each must exist)."""
    header = Header(format="trimem-export", version=VERSION, exported_at=datetime.now(timezone.utc),
                    producer=f"trimem {__version__}", namespaces=namespaces)

    def records():
        for ns in namespaces:
            space = rt.space(ns)
            total = space.sources.count()
            done = 0
            for rec in namespace_records(space):
                if rec.type == "message":
                    done += 1
                    if progress and (done % 200 == 0 or done == total):
                        progress(done, total, ns)
                yield rec
    return header, records()
