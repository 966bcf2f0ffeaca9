"""Everything a ``remember`` call does before the namespace's write lock: check every input
(:func:`checked`: nothing is read or embedded before), then find what is new, give it its
stable ids and embed it with its passages (:func:`prepared`). The write under the lock is
``remember_write.py``; the tool itself ``remember.py``."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..strategies.ids import stable_id
from . import validate as v
from .errors import ToolFailure
from .curated import check_curated, curated_texts, resolve_refs

if TYPE_CHECKING:
    from ..storage.space import Space
    from .remember import Curated, Message
    from .runtime import Runtime

PRECHECK_MIN = 8   # a call with more refs than this looks them up before embedding too
# A call that embeds at most this many texts (its messages and their passages, about one per
# 700 characters) and carries no curated memories is embedded while its session row commits
# (``Prep.ready``): an exchange of an agent loop pays the longer of the two, not their sum. A
# larger call embeds before the lock, which it must not hold for that long.
OVERLAP_TEXTS = 16
_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="trimem-embed"))
        return _POOL[0]


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def check_messages(rt: Runtime, messages: list[Message], session_time,
                   whole_session: bool = False) -> list[dict]:
    """Rows for ``messages``, or ToolFailure naming the first bad one. ``whole_session``: the
    per-call limits (message count, characters in all) do not apply: an import writes a session
    that grew over many calls in one call (its file's size is bounded instead)."""
    lim = rt.limits
    if not messages:
        raise ToolFailure("messages is empty: pass at least one {content: ...}")
    if len(messages) > lim.max_messages and not whole_session:
        raise ToolFailure(f"{len(messages)} messages in one call; the limit is {lim.max_messages}: "
                        "split them over several calls with the same session_id")
    total = sum(len(m.content or "") for m in messages)
    if total > lim.max_call_chars and not whole_session:
        raise ToolFailure(f"the messages hold {total} characters in all; the limit per call is "
                        f"{lim.max_call_chars}: split them over several calls with the same "
                        "session_id")
    rows = []
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if not m.content or not m.content.strip():
            raise ToolFailure(f"{where}.content is empty")
        if len(m.content) > lim.max_message_chars:
            raise ToolFailure(f"{where}.content is {len(m.content)} characters; the limit is "
                            f"{lim.max_message_chars}: split it into several messages")
        v.unicode(f"{where}.content", m.content)
        rows.append({
            "id": new_id("src"), "text": m.content,
            "speaker": v.text_field(f"{where}.speaker", m.speaker, lim),
            "ref": v.text_field(f"{where}.ref", m.ref, lim),
            "timestamp": v.when(f"{where}.timestamp", m.timestamp) or session_time,
            "metadata": v.metadata(m.metadata, lim, where),
        })
    refs = [r["ref"] for r in rows if r["ref"] is not None]
    if len(refs) != len(set(refs)):
        dup = sorted({x for x in refs if refs.count(x) > 1})
        raise ToolFailure(f"refs must be unique within a call; repeated: {dup[:5]}")
    return rows


@dataclass
class Call:
    """One call's checked inputs: namespace, session id and time, the message rows, the
    curated memories' plan, and the ids an import keeps."""

    ns: str
    sid: str
    stime: Any
    rows: list[dict]
    plan: Any
    kept: set[str]


@dataclass
class Prep:
    """What :func:`prepared` found: refs already stored (``known``: ref -> id), the ids the
    session holds (``have``), the rows to store with their vectors (``candidates``), the
    curated memories' texts (``extra``) and vectors, the cited rows by ref, the passages.
    The vectors and passages are there once :meth:`ready` returns."""

    known: dict[Any, str]
    have: set[str]
    candidates: list[dict]
    extra: list[str]
    cur_vecs: Any
    by_ref: dict
    passages: list[dict]
    pending: Future | None = None   # the embedding, when it runs beside the session row's commit

    def ready(self) -> None:
        """Wait for the embedding (raises what it raised: nothing is stored then)."""
        if self.pending is not None:
            pending, self.pending = self.pending, None
            self.take(*pending.result())

    def take(self, vecs: Any, passages: list[dict]) -> None:
        """The embedding's results: each new row's vector, the curated texts' and the passages."""
        n = len(self.candidates)
        for r, vec in zip(self.candidates, vecs[:n]):
            r["vector"] = vec
        self.cur_vecs = vecs[n:]
        self.passages = passages


def checked(rt: Runtime, messages: list[Message], session_id: str | None,
            session_time: str | None, namespace: str, curated: Curated | None,
            whole_session: bool, keep_ids: list[str | None] | None) -> Call:
    ns = v.namespace(namespace, rt.limits)
    sid = v.text_field("session_id", session_id, rt.limits) or new_id("ses")
    if session_id is not None and not session_id.strip():
        raise ToolFailure("session_id must not be empty (omit it to start a new session)")
    stime = v.when("session_time", session_time)
    rows = check_messages(rt, messages, stime, whole_session)
    for r, kept in zip(rows, keep_ids or []):
        if kept is not None and r["ref"] is None:
            r["id"] = v.text_field("id", kept, rt.limits, required=True)
    plan = check_curated(rt, curated, whole_session) if curated is not None else None
    if plan is not None and not whole_session:
        total = sum(len(r["text"]) for r in rows) + sum(len(t) for t in curated_texts(plan))
        if total > rt.limits.max_call_chars:
            raise ToolFailure(f"the messages and curated memories hold {total} characters in all; "
                            f"the limit per call is {rt.limits.max_call_chars}")
    kept_ids = {r["id"] for r in rows if r["ref"] is None} if keep_ids else set()
    return Call(ns, sid, stime, rows, plan, kept_ids)


def prepared(rt: Runtime, call: Call, progress) -> Prep:
    """The rows not stored yet, their stable ids, vectors and passages, and the curated
    memories' vectors: everything that can be done before the lock (embedding above all)."""
    from ..storage.sources import search_text  # lazy: lancedb (storage.sources), not at start-up
    from ..storage.passages import PASSAGE_CHARS  # lazy: lancedb (storage.passages), likewise

    space, sid, rows, plan = rt.space(call.ns), call.sid, call.rows, call.plan
    # Retries are safe: a message whose ref is already stored in this session is not stored
    # again (its existing id is returned), so a host that resends after a crash or a timeout
    # never duplicates memory. The check under the lock decides (``remember_write.committed``);
    # the look-up here only spares a large resent call its embedding (for a few messages,
    # embedding them again on a retry costs less than a look-up on every call of an agent
    # loop), and lets curated memories cite a resent message by the id it is stored under.
    refs = [r["ref"] for r in rows if r["ref"]]
    known = ({r.ref: r.id for r in space.sources.by_refs(refs) if r.session_id == sid}
             if len(refs) > PRECHECK_MIN or plan is not None else {})
    have = held_ids(space, sid, rows, call.kept)
    new_rows = [r for r in rows if (r["ref"] not in known or r["ref"] is None)
                and r["id"] not in have]
    for r in new_rows:
        if r["ref"] is not None:
            r["id"] = stable_id("src", call.ns, sid, r["ref"])
    by_ref = resolve_refs(space, plan, new_rows, sid) if plan is not None else {}
    extra = curated_texts(plan) if plan is not None else []
    prep = Prep(known, have, new_rows, extra, None, by_ref, [])
    # the inputs are copied here: the job must not read rows the caller goes on numbering
    texts = [search_text(r) for r in new_rows] + extra
    when = call.stime or space.now()
    long_rows = [dict(r, session_id=sid, timestamp=r["timestamp"] or when) for r in new_rows]

    def embed() -> tuple[Any, list[dict]]:   # the vectors, and the passages of long messages
        return rt.embed(texts, progress), space.passages.rows_of(long_rows)

    n_texts = sum(1 + len(r["text"]) // PASSAGE_CHARS for r in new_rows) + len(extra)
    if new_rows and plan is None and n_texts <= OVERLAP_TEXTS:
        prep.pending = _pool().submit(embed)
    else:   # before the lock: a lock is held for writes only (other processes wait for it)
        prep.take(*embed())
    return prep


def held_ids(space: Space, sid: str, rows: list[dict], kept: set[str]) -> set[str]:
    """Which kept ids of ``rows`` this session already holds. A kept id another session holds
    names another message (ids are unique in a namespace): that row is given a stable id of
    its own instead (of this session and the kept id, so a second import finds it again)."""
    def sessions(ids: set[str]) -> dict[str, str]:
        return {r.id: r.session_id for r in space.sources.get(sorted(ids))} if ids else {}

    found = sessions({r["id"] for r in rows if r["ref"] is None} & kept)
    moved = set()
    for r in rows:
        if r["ref"] is None and found.get(r["id"], sid) != sid:
            r["id"] = stable_id("src", space.namespace, sid, "", r["id"])
            kept.add(r["id"])
            moved.add(r["id"])
    found |= sessions(moved)
    return {i for i, s in found.items() if s == sid}
