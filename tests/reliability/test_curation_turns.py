"""Processes curating one namespace take turns (``storage/curating.py``): real processes on one
memory folder, real LanceDB, the real embedder.

Two processes that curated sessions of one namespace at once each planned their writes from
tables the other was rewriting (eight sessions at once: 115-137 of ~209 wiki pages came out
unlike what one process derives in the order the steps began). With turns, their steps do not
overlap, and what they derive equals what one process derives curating the sessions in the
order the turns were taken. A session another process curated meanwhile is not curated again;
a worker whose namespace another process is curating does not wait there (this process's
forget is not held up)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

from trimem.bench.synth import Synth
from trimem.server.settings import Settings
from trimem.storage.curating import CLAIM_FRESH_S, CurationTurns
from trimem.storage.locks import LockBusy
from trimem.storage.names import namespace_key
from trimem.tools.forget import forget
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

N_SESSIONS = 6
NOT_COMPARED = {"sources", "sessions", "recalls", "audit"}   # written by remember, or logs

CURATOR = textwrap.dedent("""
    import sys, time
    from trimem.server.settings import Settings
    from trimem.tools.runtime import Runtime

    home, log, sids = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    rt = Runtime(Settings(home=home, curation=False).to_config())
    w = rt.curation
    real = w._curate

    def logged(ns, sid, *rest):   # runs inside the namespace's curation turn
        t0 = time.time()
        try:
            return real(ns, sid, *rest)
        finally:
            with open(log, "a") as fh:
                fh.write(f"{t0:.6f} {time.time():.6f} {sid}\\n")

    w._curate = logged
    for sid in sids:
        w.enqueue("default", sid)
    assert w.wait_idle(240)
    assert not w.failures, list(w.failures)
    rt.close(30)
""")


def runtime(home) -> Runtime:
    return Runtime(Settings(home=str(home), curation=False).to_config())


def state(rt: Runtime, sid: str):
    got = rt.space("default").sessions.get(sid)
    assert got is not None
    return got


def store_sessions(home: Path) -> list[str]:
    made = Synth(seed=5).sessions()
    rt = runtime(home)
    sids = []
    try:
        for _ in range(N_SESSIONS):
            sid, when, msgs = next(made)
            turns = [Message(content=m["content"], speaker=m["speaker"], ref=f"{sid}-{i}")
                     for i, m in enumerate(msgs)]
            remember(rt, turns, session_id=sid, session_time=when, namespace="default")
            sids.append(sid)
        sessions = rt.space("default").sessions
        for sid in sids:   # as a process that stopped before curating them leaves them
            sessions.set_curation(sid, "queued", state(rt, sid).n_messages)
    finally:
        rt.close(30)
    return sids


def _value(key: str, v):
    if isinstance(v, list) and v and isinstance(v[0], float):
        return np.asarray(v, np.float32).tobytes()
    if key == "lineage" and isinstance(v, str):   # its entries carry the wall-clock time
        return [{k: x for k, x in e.items() if k != "at"} for e in json.loads(v)["history"]]
    if key == "state" and isinstance(v, str) and v.startswith("{"):
        d = json.loads(v)
        d.get("sync", {}).pop("token", None)   # a random token, new at each write
        return json.dumps(d, sort_keys=True)
    return repr(v)


def derived(home: Path) -> dict[str, list]:
    """Every derived table of the namespace, row for row (wall-clock times and random tokens
    left out: they differ between any two runs)."""
    import lancedb

    db = lancedb.connect(str(home))
    out = {}
    for name in db.list_tables(limit=1000).tables:
        kind = name.split("__")[1] if name.startswith("ns_") else None
        if kind is None or kind in NOT_COMPARED:
            continue
        rows = db.open_table(name).to_arrow().to_pylist()
        out[kind] = sorted(repr(sorted((k, _value(k, v)) for k, v in r.items() if k != "created_at"))
                           for r in rows)
    return out


@pytest.mark.slow   # ~15 s: three processes curate six sessions
def test_two_processes_take_turns_and_derive_what_one_process_does(tmp_path):
    prep = tmp_path / "prep"
    sids = store_sessions(prep)
    shutil.copytree(prep, tmp_path / "two")
    shutil.copytree(prep, tmp_path / "one")
    log = tmp_path / "turns.log"
    procs = [subprocess.Popen([sys.executable, "-c", CURATOR, str(tmp_path / "two"), str(log),
                               ",".join(sids[k::2])], stderr=subprocess.PIPE, text=True)
             for k in (0, 1)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    steps = sorted((float(a), float(b), sid) for a, b, sid in
                   (line.split() for line in log.read_text().splitlines()))
    assert sorted(s for _, _, s in steps) == sorted(sids)
    for (_, end, _), (start, _, _) in zip(steps, steps[1:]):
        assert end <= start, f"two curation steps of one namespace overlapped: {steps}"
    whose = [sids.index(sid) % 2 for _, _, sid in steps]   # which process curated it
    switches = sum(x != y for x, y in zip(whose, whose[1:]))
    assert switches >= 3, f"one process kept the turn while the other's sessions waited: {whose}"

    rt = runtime(tmp_path / "one")   # one process, in the order the turns were taken
    try:
        for _, _, sid in steps:
            rt.curation.curate_now("default", sid)
        assert not rt.curation.failures
    finally:
        rt.close(30)
    one, two = derived(tmp_path / "one"), derived(tmp_path / "two")
    assert {"wiki_pages", "wiki_groups", "memories", "ws_threads"} <= set(one)
    assert one == two


def test_a_session_another_process_curated_is_not_curated_again(tmp_path, monkeypatch):
    from trimem.tools import curation

    sids = store_sessions(tmp_path)[:1]
    a, b = runtime(tmp_path), runtime(tmp_path)   # two stores on one folder: two processes' view
    steps: list[str] = []
    real = curation._fenced_curate

    def counted(env, strat, sid):   # this folder's session only: other tests' threads may curate
        if sid == sids[0] and env.space.store.uri == str(tmp_path):
            steps.append(strat.name)
        return real(env, strat, sid)

    monkeypatch.setattr(curation, "_fenced_curate", counted)
    try:
        assert b.curation.curate_now("default", sids[0])
        assert state(b, sids[0]).curation == "done"
        n = len(steps)
        assert n >= 3 and len(set(steps)) == n   # each curating strategy once
        assert a.curation.curate_now("default", sids[0], wait_s=0, due=True)   # a's queued copy
        assert len(steps) == n
        assert a.curation.curate_now("default", sids[0])   # asked for: curated again
        assert len(steps) == 2 * n
    finally:
        a.close(30)
        b.close(30)


HOLDER = textwrap.dedent("""
    import os, sys, time
    from trimem.storage.curating import CurationTurns

    turns = CurationTurns(sys.argv[1], 10.0, 30.0)
    with turns.turn("default"):
        open(sys.argv[2], "w").close()
        while not os.path.exists(sys.argv[3]):
            time.sleep(0.02)
""")


@contextmanager
def turn_held_elsewhere(home: Path) -> Iterator[Callable[[], None]]:
    """Another process holds ``default``'s curation turn on ``home`` until the yielded
    ``release`` is called (or the block ends)."""
    held, stop = home / "held", home / "release"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home), str(held), str(stop)],
                              stderr=subprocess.PIPE, text=True)

    def failed() -> str:   # what the holder wrote, once it ended
        return "(still running)" if holder.poll() is None else holder.communicate()[1]

    def release() -> None:
        stop.touch()
        assert holder.wait(60) == 0, failed()

    try:
        deadline = time.monotonic() + 60
        while not held.exists():
            assert holder.poll() is None and time.monotonic() < deadline, failed()
            time.sleep(0.02)
        yield release
    finally:
        stop.touch()
        holder.wait(60)


def test_a_worker_does_not_wait_in_another_processes_turn(tmp_path):
    rt = runtime(tmp_path)
    try:
        remember(rt, [Message(content="The boat trip is on Friday.", speaker="user", ref="a"),
                      Message(content="And the kayak stays home.", speaker="user", ref="b")],
                 session_id="s", namespace="default")
        rt.space("default").sessions.set_curation("s", "queued", 2)
        with turn_held_elsewhere(tmp_path) as release:
            rt.curation.enqueue("default", "s")
            time.sleep(1.5)   # the worker tried (and looks again every BUSY_RETRY_S)
            assert state(rt, "s").curation == "queued"
            t0 = time.monotonic()
            forget(rt, refs=["b"], namespace="default")   # the namespace's lock is not held
            assert time.monotonic() - t0 < 10
            release()
        assert rt.curation.wait_idle(120)
        assert not rt.curation.failures
        assert state(rt, "s").curation == "done"
    finally:
        rt.close(30)


def test_a_process_waiting_for_the_turn_goes_next(tmp_path):
    """A fair try that finds the turn taken claims the next; another process's fair try lets a
    fresh claim go first, a stale one not; a try that is not fair (an explicit call) does not
    look; and a claim is not overwritten by the process it holds back."""
    a, b = CurationTurns(str(tmp_path), 10.0, 5.0), CurationTurns(str(tmp_path), 10.0, 5.0)
    claim = tmp_path / "_locks" / f"{namespace_key('default')}.curate.next"
    with turn_held_elsewhere(tmp_path) as release:
        with pytest.raises(LockBusy), b.turn("default", wait_s=0, fair=True):
            pass
        with pytest.raises(LockBusy), a.turn("default", wait_s=0, fair=True):
            pass
        release()
    assert claim.read_text().startswith(b._token)   # a's failed try left b's claim standing
    with pytest.raises(LockBusy), a.turn("default", wait_s=0, fair=True):
        pass
    with a.turn("default", wait_s=0):   # not fair: an explicit call does not look
        pass
    with b.turn("default", wait_s=0, fair=True):   # b's own claim: taken, and cleared
        assert not claim.exists()
    with a.turn("default", wait_s=0, fair=True):
        pass
    claim.write_text(f"{b._token} {time.time() - CLAIM_FRESH_S - 1:.3f}")   # b stopped waiting
    with a.turn("default", wait_s=0, fair=True):
        pass


def test_a_turn_held_by_another_thread_here_is_not_claimed(tmp_path):
    """Claims are for other processes: a fair try that finds the turn held by another thread of
    this process (a consolidation beside the worker) leaves no claim behind."""
    import threading

    turns = CurationTurns(str(tmp_path), 10.0, 5.0)
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with turns.turn("default"):
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        with pytest.raises(LockBusy), turns.turn("default", wait_s=0, fair=True):
            pass
        assert not list((tmp_path / "_locks").glob("*.curate.next"))
    finally:
        done.set()
        holder.join(30)
    with turns.turn("default", wait_s=0, fair=True):   # free again
        pass


def test_a_claim_that_cannot_be_written_fails_no_curation(tmp_path, monkeypatch):
    """Claims only order the turns: a claim that cannot be written (a full disk) leaves the try
    busy, as it was, and one that cannot be dropped leaves the turn taken and let go."""
    from trimem.storage import curating

    def broken(path, token):
        raise OSError(28, "No space left on device")

    turns = CurationTurns(str(tmp_path), 10.0, 5.0)
    with turn_held_elsewhere(tmp_path) as release:
        monkeypatch.setattr(curating, "write_token", broken)
        with pytest.raises(LockBusy), turns.turn("default", wait_s=0, fair=True):
            pass
        monkeypatch.undo()
        with pytest.raises(LockBusy), turns.turn("default", wait_s=0, fair=True):
            pass                                   # this one claims
        release()
    unlink = Path.unlink

    def unlink_but_claims(self, missing_ok=False):
        if self.name.endswith(".curate.next"):
            broken(self, "")
        unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink_but_claims)
    with turns.turn("default", wait_s=0, fair=True) as turn:   # the claim stays; the turn is had
        assert turn.held is not None
    monkeypatch.undo()
    other = CurationTurns(str(tmp_path), 10.0, 5.0)
    with other.turn("default", wait_s=0):          # and was let go
        pass


def test_a_turn_says_whether_another_process_curated_since(tmp_path):
    """Two ``CurationTurns`` on one folder stand for two processes (each its own token)."""
    a, b = CurationTurns(str(tmp_path), 10.0, 5.0), CurationTurns(str(tmp_path), 10.0, 5.0)
    seen = []
    for who in (a, a, b, b, a, a, b):
        with who.turn("default") as turn:
            seen.append(turn.moved)
    assert seen == [True, False, True, False, True, False, True]
    with a.turn("other") as turn:   # per namespace
        assert turn.moved
    with b.turn("default") as turn:
        assert not turn.moved
    token = (tmp_path / "_locks").glob("*.curated")
    before = {p.name: p.read_text() for p in token}
    with a.turn("default", writes=False) as turn:   # a dry run: reads afresh, writes no token
        assert turn.moved
    assert {p.name: p.read_text() for p in (tmp_path / "_locks").glob("*.curated")} == before
    with a.turn("default") as turn:
        assert not turn.moved


def test_a_turn_after_another_processes_reads_the_namespace_afresh(tmp_path):
    """After another process's turn, this process's caches of the namespace are dropped and
    its table handles moved to the newest versions before it curates (a handle looks for new
    versions once a second only, and a rewrite in place moves no row count a cache checks);
    after its own turn, nothing is dropped."""

    class Probe:
        dropped = 0

        def invalidate(self):
            self.dropped += 1

    sid = store_sessions(tmp_path)[0]
    a, b = runtime(tmp_path), runtime(tmp_path)
    try:
        probe = Probe()
        a.context("default").put("probe", probe)
        with a.curating("default"):   # its first: whoever curated before, it reads afresh
            pass
        dropped = probe.dropped
        with a.curating("default") as turn:   # its own turn was the last
            assert not turn.moved
        assert probe.dropped == dropped
        n = state(a, sid).n_messages
        assert state(a, sid).curation == "queued"   # a's handle has just looked
        with b.curating("default"):   # well within the second: a's handle would not look again
            b.space("default").sessions.set_curation(sid, "failed", n)
        with a.curating("default") as turn:
            assert turn.moved and probe.dropped == dropped + 1
            assert state(a, sid).curation == "failed"
    finally:
        a.close(30)
        b.close(30)


def test_periodic_consolidation_does_not_wait_for_another_processes_turn(tmp_path):
    rt = Runtime(Settings(home=str(tmp_path), curation=False,
                          consolidate_every_sessions=1).to_config())
    try:
        remember(rt, [Message(content="Ana moved to Lisbon in May.", speaker="user")],
                 session_id="s1", namespace="default")
        periodic = rt.curation.periodic
        periodic.session_curated("default", "s1")
        with turn_held_elsewhere(tmp_path) as release:
            t0 = time.monotonic()
            assert periodic.run_if_due("default") is None
            assert time.monotonic() - t0 < 5
            assert periodic.pending("default") == ["s1"]   # counted still: the next one tries
            release()
        assert periodic.run_if_due("default") is not None
        assert periodic.pending("default") == []
    finally:
        rt.close(30)
