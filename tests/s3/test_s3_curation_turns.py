"""Curation turns on a bucket (``storage/bucket_lease.py``): two stores on one moto bucket stand
for two machines (each its own in-process locks and token). A turn is a lease on the namespace's
row of the ``_leases`` table, taken by a conditional write: one holder at a time, the token says
whether the other curated since, and a holder stopped past its lease loses the turn."""

from __future__ import annotations

import threading
import time

import pytest

from trimem.storage.bucket_lease import BucketLeases
from trimem.storage.db import Store
from trimem.storage.locks import LockBusy, LockLost
from trimem.storage.names import namespace_key

pytestmark = pytest.mark.slow


def stores(home: str, n: int = 2, lease_s: float = 10.0) -> list[Store]:
    return [Store(home, lock_lease_s=lease_s, lock_wait_s=5.0) for _ in range(n)]


def test_one_holder_at_a_time_and_the_token_says_who_curated(s3_env):
    a, b = stores(s3_env["TRIMEM_HOME"])
    seen = []
    with a.curations.turn("default") as turn:
        seen.append(turn.moved)
        with pytest.raises(LockBusy):
            with b.curations.turn("default", wait_s=0):
                pass
        with b.curations.turn("other", wait_s=0) as other:   # per namespace
            assert other.moved
        with a.curations.turn("default", wait_s=0) as again:   # re-entrant in the holder
            assert not again.moved
    for who in (a, b, b, a):
        with who.curations.turn("default") as turn:
            seen.append(turn.moved)
    with b.curations.turn("default", writes=False) as turn:   # a dry run reads afresh ...
        seen.append(turn.moved)
    with a.curations.turn("default") as turn:                 # ... and tells no one
        seen.append(turn.moved)
    assert seen == [True, False, True, False, True, True, False]


def test_two_machines_curating_at_once_never_overlap(s3_env):
    a, b = stores(s3_env["TRIMEM_HOME"])
    spans: list[tuple[float, float, str]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def curate(store: Store, me: str) -> None:
        try:
            start.wait()
            for _ in range(4):
                with store.curations.turn("default", wait_s=60) as turn:
                    t0 = time.monotonic()
                    time.sleep(0.2)   # a step: reads, then writes
                    turn.check()
                    spans.append((t0, time.monotonic(), me))
        except BaseException as exc:   # reported in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=curate, args=(s, m)) for s, m in ((a, "a"), (b, "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    spans.sort()
    assert len(spans) == 8
    for (_, end, _), (begin, _, _) in zip(spans, spans[1:]):
        assert end <= begin, spans


def test_a_holder_stopped_past_its_lease_loses_the_turn(s3_env):
    home = s3_env["TRIMEM_HOME"]
    a, b = stores(home, lease_s=1.5)
    leases = BucketLeases(a.open_table, 1.5)
    held, _ = leases.take("k", "stopped-holder", 5.0, lambda found: "t1")
    held._stop.set()            # as if its process was stopped: no renewal from here on
    held._renewer.join()
    with pytest.raises(LockBusy):
        leases.take("k", "other", 0.0, lambda found: "t2")
    other, found = BucketLeases(b.open_table, 1.5).take("k", "other", 10.0, lambda found: "t2")
    assert found == "t1"        # the token the stopped holder wrote
    with pytest.raises(LockLost):
        held.check()            # resumed, it writes nothing more
    assert not leases.write("k", "stopped-holder", 0, "t1", mine="stopped-holder")
    time.sleep(2.0)             # the new holder renews its lease while it holds it
    other.check()
    other.release()
    row = leases.read("k")
    assert row is not None and row["holder"] == ""


def test_two_machines_workers_curate_one_namespace_in_turns(s3_env, monkeypatch):
    """Two runtimes on one bucket (two machines' servers), each curating its own sessions of one
    namespace with its worker at the same moment: their steps never overlap, the turn passes
    from one to the other while both have sessions waiting (without the claims: 0 0 1 1), and
    every session is curated."""
    from trimem.bench.synth import Synth
    from trimem.server.settings import Settings
    from trimem.tools.remember import Message, remember
    from trimem.tools.runtime import Runtime

    home = s3_env["TRIMEM_HOME"]
    runtimes = [Runtime(Settings(home=home, curation=False).to_config()) for _ in range(2)]
    made = Synth(seed=11).sessions()
    spans: list[tuple[float, float, str]] = []
    try:
        shares: list[list[str]] = [[], []]
        for k in range(4):
            sid, when, msgs = next(made)
            rt = runtimes[k % 2]
            remember(rt, [Message(content=m["content"], speaker=m["speaker"], ref=f"{sid}-{i}")
                          for i, m in enumerate(msgs)], session_id=sid, session_time=when,
                     namespace="team")
            shares[k % 2].append(sid)
            sessions = rt.space("team").sessions   # queued, as a server with curation on leaves it
            row = sessions.get(sid)
            assert row is not None
            sessions.set_curation(sid, "queued", row.n_messages)
        for rt in runtimes:
            worker, real = rt.curation, rt.curation._curate

            def logged(ns, sid, *rest, real=real):   # runs inside the turn
                t0 = time.monotonic()
                try:
                    return real(ns, sid, *rest)
                finally:
                    spans.append((t0, time.monotonic(), sid))

            monkeypatch.setattr(worker, "_curate", logged)
        for rt, share in zip(runtimes, shares):
            for sid in share:
                rt.curation.enqueue("team", sid)
        for rt in runtimes:
            assert rt.curation.wait_idle(300)
            assert not rt.curation.failures
        spans.sort()
        assert sorted(s for *_, s in spans) == sorted(shares[0] + shares[1])
        assert min(end - begin for begin, end, _ in spans) > 0.2   # whole steps: every strategy
        whose = [0 if sid in shares[0] else 1 for *_, sid in spans]
        assert whose in ([0, 1, 0, 1], [1, 0, 1, 0]), whose   # the turn passes (claims)
        for (_, end, _), (begin, _, _) in zip(spans, spans[1:]):
            assert end <= begin, spans
        last = next(sid for *_, sid in reversed(spans))
        first = runtimes[0] if last in shares[1] else runtimes[1]   # did not curate last
        with first.curating("team") as turn:   # the other curated last: read afresh
            assert turn.moved
            sessions = first.space("team").sessions
            for sid in shares[0] + shares[1]:
                row = sessions.get(sid)
                assert row is not None and row.curation == "done"
    finally:
        for rt in runtimes:
            rt.close(60)


SECRET = "The storage unit code is 4417 and only the night guard knows it."


def _holding(home: str, needle: str) -> list[str]:
    """The tables of the store whose current rows hold ``needle`` in a string column."""
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(home)
    out = []
    for name in db.list_tables(limit=1000).tables:
        data = db.open_table(name).to_arrow()
        for col in data.itercolumns():
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                if any(needle in (v or "") for v in col.to_pylist()):
                    out.append(name)
                    break
    return out


def test_a_forget_on_another_machine_waits_for_the_curation_step(s3_env, monkeypatch):
    """A bucket has no forget fence: a forget that deleted a message while another machine's
    curation step had read it but not yet written let that step write rows quoting it. The
    forget holds the curation turn there, so it deletes after the step, and nothing is left."""
    from trimem.bench.synth import Synth
    from trimem.server.settings import Settings
    from trimem.storage import derived
    from trimem.tools.forget import forget
    from trimem.tools.remember import Message, remember
    from trimem.tools.runtime import Runtime

    home = s3_env["TRIMEM_HOME"]
    a, b = (Runtime(Settings(home=home, curation=False).to_config()) for _ in range(2))
    try:
        sid, when, msgs = next(Synth(seed=12).sessions())
        turns = [Message(content=m["content"], speaker=m["speaker"], ref=f"m{i}")
                 for i, m in enumerate(msgs)]
        turns.insert(3, Message(content=SECRET, speaker="user", ref="secret"))
        remember(a, turns, session_id=sid, session_time=when, namespace="team")
        row = a.space("team").sessions.get(sid)
        assert row is not None
        a.space("team").sessions.set_curation(sid, "queued", row.n_messages)

        read, real = threading.Event(), derived.Derived.upsert

        def slow_upsert(self, *args, **kw):   # a's step: read, then a pause before it writes
            if self.core.store is a.store and not read.is_set():
                read.set()
                time.sleep(3.0)
            return real(self, *args, **kw)

        monkeypatch.setattr(derived.Derived, "upsert", slow_upsert)
        step = threading.Thread(target=a.curation.curate_now, args=("team", sid))
        step.start()
        assert read.wait(120)
        gone = forget(b, refs=["secret"], namespace="team")   # while a's step pauses
        step.join(120)
        assert gone.removed_sources == 1
        assert not a.curation.failures
    finally:
        a.close(60)
        b.close(60)
    # without the turn: the memories and five wiki tables quoted it (checked)
    assert _holding(home, "4417") == []


def test_a_machine_waiting_for_the_turn_goes_next(s3_env):
    """Claims on a bucket are rows of the lease table: a fair try that finds the turn taken
    claims the next; the other machine's fair try lets the claim go first; a try that is not
    fair does not look; a claim that ran out holds no one back."""
    a, b = stores(s3_env["TRIMEM_HOME"])
    leases = BucketLeases(a.open_table, 10.0)
    key = namespace_key("default")
    with a.curations.turn("default"):
        with pytest.raises(LockBusy), b.curations.turn("default", wait_s=0, fair=True):
            pass
    assert leases.claimed(key) == b.curations._token
    with pytest.raises(LockBusy), a.curations.turn("default", wait_s=0, fair=True):
        pass
    assert leases.claimed(key) == b.curations._token   # a's failed try left b's claim standing
    with a.curations.turn("default", wait_s=0):         # not fair: an explicit call
        pass
    with b.curations.turn("default", wait_s=0, fair=True):   # b's own claim: taken, cleared
        assert leases.claimed(key) is None
    with a.curations.turn("default", wait_s=0, fair=True):
        pass
    leases.claim(key, b.curations._token, 0.5)          # b claims, then stops waiting
    time.sleep(0.8)
    with a.curations.turn("default", wait_s=0, fair=True):
        pass


def test_claims_that_fail_on_the_bucket_fail_no_curation(s3_env, monkeypatch):
    """A claim's request failing (the bucket's endpoint erring) leaves a fair try busy as it
    was, and a turn whose claim cannot be dropped is still taken and let go."""
    a, b = stores(s3_env["TRIMEM_HOME"])

    def broken(*args, **kw):
        raise RuntimeError("the endpoint answered 503")

    with a.curations.turn("default"):
        monkeypatch.setattr(BucketLeases, "claim", broken)
        with pytest.raises(LockBusy), b.curations.turn("default", wait_s=0, fair=True):
            pass
        monkeypatch.undo()
        with pytest.raises(LockBusy), b.curations.turn("default", wait_s=0, fair=True):
            pass                                   # this one claims
    monkeypatch.setattr(BucketLeases, "unclaim", broken)
    with b.curations.turn("default", wait_s=0, fair=True) as turn:
        assert turn.held is not None
    monkeypatch.undo()
    with a.curations.turn("default", wait_s=0):    # let go: a takes it at once
        pass
