"""The drainer: the one background process that stores what the hooks saw.

Why a second process: a hook must answer within a second, and opening LanceDB and the
embedding model takes two to four. So a ``Stop`` hook only writes a pending marker (a few
milliseconds) and starts the drainer when none runs; the drainer (``trimem hook --drain``,
detached from the host) reads each marked transcript from where its last capture ended,
redacts secrets, and stores the new messages through ``remember``, then lets curation run and
rebuilds the project's ``SessionStart`` context. It stays a little while (``linger_s``) for
the next hook, then exits. Nothing for the user to start, and nothing lost when it dies:

- the cursor of a transcript moves only after ``remember`` committed what it covers; a drainer
  killed before that is followed by one that reads the same entries again, and refs (each
  entry's own id) keep them from being stored twice;
- a marker is deleted only after its transcript was read to the end, so a hook that fires
  while a drain is under way leaves a marker that the next round reads;
- one drainer at a time (``CaptureState.drain_lock``, a lease: taken over at once when its
  holder died, after ``DRAIN_LEASE_S`` when it stopped or hung); it looks for markers once more
  after letting go of the lock, so a marker written just as it was leaving is not stranded.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Callable

from . import digest
from .hosts import reader_for
from .state import DRAIN_LEASE_S, CaptureState, read_json
from .transcript import Entry
from ..strategies.ids import stable_id
from ..tools import validate as v
from ..tools.errors import ToolFailure
from ..tools.remember import Message, remember
from .redact import redact

REAP_WAIT_S = 3.0   # how long a new drainer waits for the lock of one that just died

if TYPE_CHECKING:
    from ..tools.runtime import Runtime

log = logging.getLogger(__name__)
RETRY_S = 30.0        # a transcript whose capture failed is tried again after this long


@dataclass
class Options:
    linger_s: float = 20.0
    digest_tokens: int = 800
    curate_wait_s: float = 600.0


@dataclass
class Report:
    stored: int = 0
    already: int = 0
    skipped: Counter = field(default_factory=Counter)
    redacted: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)


def _clean(text: str) -> str:
    """Lone surrogates (a JSON ``\\ud800``) cannot be stored: each becomes ``?``."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def _time_ok(ts: str | None) -> str | None:
    try:
        return ts if ts and v.when("timestamp", ts) is not None else None
    except ToolFailure:
        return None


def _known(rt: Runtime, ns: str, sid: str, entries: list[Entry]) -> set[str]:
    """Refs stored in any session of the namespace, or forgotten there under this session or
    the session the entry came from (a forgotten message never comes back through capture,
    not even as a forked session's copy)."""
    if ns not in rt.store.namespaces():
        return set()
    space = rt.space(ns)
    have = {r.ref for r in space.sources.by_refs([e.ref for e in entries]) if r.ref is not None}
    gone = {i for r in space.derived.rows("audit", eq={"op": "forget"}, columns=["target_ids"])
            for i in (r["target_ids"] or [])}
    return have | {e.ref for e in entries
                   if {stable_id("src", ns, s, e.ref) for s in {sid, e.origin or sid}} & gone}


def _batches(entries: list[Entry], max_n: int, max_chars: int) -> list[list[Entry]]:
    out: list[list[Entry]] = [[]]
    size = 0
    for e in entries:
        if out[-1] and (len(out[-1]) >= max_n or size + len(e.text) > max_chars):
            out.append([])
            size = 0
        out[-1].append(e)
        size += len(e.text)
    return [b for b in out if b]


def store_entries(rt: Runtime, ns: str, sid: str, entries: list[Entry], rep: Report) -> None:
    """Redact, drop what the namespace holds already, and remember the rest."""
    known = _known(rt, ns, sid, entries)
    fresh = []
    for e in entries:
        if e.ref in known:
            rep.already += 1
            continue
        known.add(e.ref)   # a log may repeat an entry (a message written again when it grew)
        red = redact(_clean(e.text))
        rep.redacted.update(red.kinds)
        fresh.append(Entry(ref=e.ref, speaker=e.speaker, text=red.text,
                           timestamp=_time_ok(e.timestamp)))
    lim = rt.limits
    for batch in _batches(fresh, lim.max_messages, lim.max_call_chars):
        out = remember(rt, [Message(content=e.text, speaker=e.speaker, ref=e.ref,
                                    timestamp=e.timestamp) for e in batch],
                       session_id=sid, namespace=ns)
        rep.stored += out.stored
        rep.already += len(batch) - out.stored


def capture(rt: Runtime, state: CaptureState, key: str, marker: dict) -> Report:
    """Read one log from its cursor to its end and store what is new. The marker's ``host``
    names the reader (``capture/hosts.py``): Claude Code's transcript by default."""
    rep = Report()
    path, ns, sid = marker["transcript_path"], marker["namespace"], marker["session_id"]
    cur = state.cursor(key)
    same = cur.get("transcript_path") == path
    offset = int(cur.get("offset") or 0) if same else 0
    rstate = dict(cur.get("reader_state") or {}) if same else {}
    limit = rt.limits.max_message_chars - 64
    try:
        read = reader_for(marker.get("host"))   # an unknown host is this capture's error
        while True:
            chunk = read(path, offset, limit, rstate)
            rep.skipped.update(chunk.skipped)
            sid = sid or chunk.session_id or key
            if chunk.entries:
                store_entries(rt, ns, sid, chunk.entries, rep)
            moved = chunk.end != offset
            offset, rstate = chunk.end, chunk.state
            if not moved:
                break
            _save(state, key, marker, sid, (offset, rstate), rep, done=False, prev=cur)
    except Exception as exc:  # noqa: BLE001 - recorded for status, stderr and the next try
        rep.errors.append(f"{type(exc).__name__}: {exc}"[:500])
    _save(state, key, marker, sid, (offset, rstate), rep, done=True, prev=cur)
    return rep


def _save(state: CaptureState, key: str, marker: dict, sid: str, where: tuple[int, dict],
          rep: Report, done: bool, prev: dict) -> None:
    total = dict(prev.get("total") or {})
    last = {"at": datetime.now().astimezone().isoformat(timespec="seconds"),
            "event": marker.get("event"), "stored": rep.stored, "already_stored": rep.already,
            "skipped": dict(rep.skipped), "redacted": dict(rep.redacted), "errors": rep.errors,
            "complete": done and not rep.errors}
    if done:
        total = {"stored": int(total.get("stored", 0)) + rep.stored,
                 "redacted": int(total.get("redacted", 0)) + sum(rep.redacted.values()),
                 "captures": int(total.get("captures", 0)) + 1}
    state.save_cursor(key, {"transcript_path": marker["transcript_path"], "namespace":
                            marker["namespace"], "session_id": sid, "offset": where[0],
                            "reader_state": where[1], "host": marker.get("host"), "last": last,
                            "total": total if done else prev.get("total") or {}})


def _round(rt: Runtime, state: CaptureState, failed: dict[str, float], touched: set[str]) -> bool:
    """Capture every marked transcript once; True if there was anything to do."""
    did = False
    for key, paths in state.pending().items():
        if failed.get(key, 0) > time.monotonic():
            continue
        markers = [m for m in (read_json(p) for p in paths) if isinstance(m, dict)
                   and isinstance(m.get("transcript_path"), str)
                   and isinstance(m.get("namespace"), str)]
        did = True
        if markers:
            rep = capture(rt, state, key, markers[-1])
            touched.add(markers[-1]["namespace"])
            if rep.errors:
                failed[key] = time.monotonic() + RETRY_S
                log.error("capture of %s: %s", markers[-1]["transcript_path"], rep.errors[-1])
                continue
        for p in paths:
            p.unlink(missing_ok=True)
    return did


def _digests(rt: Runtime, state: CaptureState, touched: set[str], opts: Options) -> None:
    known = {str(r["namespace"]) for r in state.transcripts() if r.get("namespace")}
    for ns in sorted(touched | {n for n in known if digest.stale(state, n)}):
        if ns not in rt.store.namespaces():
            continue
        try:
            digest.refresh(rt, state, ns, opts.digest_tokens)
        except Exception:  # noqa: BLE001 - SessionStart then shows nothing for it
            log.exception("building the session-start context of %r failed", ns)
    touched.clear()


def drain(rt_factory: Callable[[], Runtime], state: CaptureState, opts: Options) -> int:
    """Be the drainer until nothing is left to do for ``opts.linger_s``; 0 if another
    process is the drainer already."""
    rt: Runtime | None = None
    try:
        while True:
            # a drainer started in place of a stopped or hung one waits out its lease; in place
            # of a killed one, a moment for it to be reaped (its pid counts as alive till then)
            with state.drain_lock(DRAIN_LEASE_S + 2 if state.holder_silent() else
                                  REAP_WAIT_S) as got:
                if not got:
                    return 0
                state.clear_starting()
                if rt is None:
                    rt = rt_factory()
                _serve(rt, state, opts)
            if not state.pending():
                return 0
    finally:
        if rt is not None:
            rt.close()


def _serve(rt: Runtime, state: CaptureState, opts: Options) -> None:
    failed: dict[str, float] = {}
    touched: set[str] = set()
    idle_since = time.monotonic()
    digests_due = True
    curate_end = time.monotonic() + opts.curate_wait_s
    while True:
        if _round(rt, state, failed, touched):
            idle_since = time.monotonic()
            curate_end = idle_since + opts.curate_wait_s
            digests_due = True
            continue
        if digests_due and (rt.curation.wait_idle(0.5) or time.monotonic() > curate_end):
            _digests(rt, state, touched, opts)
            digests_due = False
            idle_since = time.monotonic()
        elif not digests_due and time.monotonic() - idle_since > opts.linger_s:
            return
        else:
            time.sleep(0.2)
