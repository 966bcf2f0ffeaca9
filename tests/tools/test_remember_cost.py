"""What one exchange remembered into a live session costs the store: an agent loop calls
``remember`` after every exchange, so each commit, lock hold and LanceDB round trip on that path
is paid on every turn (on a busy two-core machine a round trip through lancedb's background
event loop costs milliseconds). Counted for the calling thread only: background curation and
upkeep are not on the request path."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from lancedb import background_loop
from lancedb.table import LanceTable

from trimem.server.settings import Settings
from trimem.storage.locks import LeaseLock
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

WRITES = ("add", "merge_insert", "delete", "update")


@contextmanager
def counting(monkeypatch):
    """Counts, in this thread: LanceDB commits, takes of a lock file, LanceDB round trips."""
    me, seen = threading.get_ident(), {"commits": 0, "lock_takes": 0, "round_trips": 0}

    def counter(owner, name, key):
        orig = getattr(owner, name)

        def counted(*a, **kw):
            if threading.get_ident() == me:
                seen[key] += 1
            return orig(*a, **kw)
        monkeypatch.setattr(owner, name, counted)

    for name in WRITES:
        counter(LanceTable, name, "commits")
    counter(LeaseLock, "_take", "lock_takes")
    counter(background_loop.LOOP, "run", "round_trips")
    yield seen
    monkeypatch.undo()


def exchange(i: int) -> list[Message]:
    return [Message(content=f"Question {i}: why did the nightly export fail?", speaker="user",
                    ref=f"u{i}"),
            Message(content=f"Answer {i}: its disk filled up; it runs on the big volume now.",
                    speaker="assistant", ref=f"a{i}")]


def test_one_exchange_into_a_live_session_is_one_lock_hold_and_two_commits(tmp_path,
                                                                            monkeypatch):
    rt = Runtime(Settings(home=str(tmp_path / "home"), curation=False).to_config())
    try:
        for i in range(3):   # the session exists, its tables are open and indexed
            remember(rt, exchange(i), session_id="live")
        with counting(monkeypatch) as seen:
            out = remember(rt, exchange(3), session_id="live")
        assert out.stored == 2
        # the session row and the messages, under one hold of the lock; the audit entry is
        # appended off the call's path (``Log.audit(queued=True)``)
        assert seen["commits"] == 2, seen
        assert seen["lock_takes"] == 1, seen
        # no look-up before the lock that the one under it repeats (was 29 round trips), and
        # the two reads under it (the session row, the session's refs) not made at all: the
        # versions this process's last commits made still stand (``storage/versioned.py``;
        # were a round trip each, and five each before that): two checkouts, two looks at
        # the versions, two commits and the count of the sources after theirs, and before each
        # commit a look at the table's newest version (``storage.db.retrying``: about 0.35 ms
        # each; a write planned from an older one conflicted and left files)
        assert seen["round_trips"] <= 9, seen
        space = rt.space("default")
        assert [r.seq for r in space.sources.by_session("live")] == list(range(8))
        # the queued audit entry is there for whoever reads the audit log
        assert [a["target_ids"] for a in space.log.audit_log() if a["op"] == "remember"][-1] \
            == out.source_ids
        assert (sess := space.sessions.get("live")) is not None and sess.n_messages == 8
        # a retry of the same exchange stores nothing again and returns the same ids
        again = remember(rt, exchange(3), session_id="live")
        assert again.stored == 0 and again.source_ids == out.source_ids
        assert space.sources.count() == 8
    finally:
        rt.close()


def test_an_appended_exchange_without_a_time_takes_the_sessions_time(tmp_path):
    rt = Runtime(Settings(home=str(tmp_path / "home"), curation=False).to_config())
    try:
        remember(rt, exchange(0), session_id="s", session_time="2024-05-08T10:00:00Z")
        remember(rt, exchange(1), session_id="s")
        rows = rt.space("default").sources.by_session("s")
        assert {r.timestamp and r.timestamp.isoformat() for r in rows} == {"2024-05-08T10:00:00+00:00"}
    finally:
        rt.close()


def slowed(rt: Runtime, monkeypatch, fail: bool = False) -> None:
    """The embedder and the session row's commit each take 0.6 s more (the embedder then fails
    if ``fail``)."""
    import time

    from trimem.storage.sessions import Sessions
    from trimem.tools.errors import ToolFailure

    embed, merge = rt.embed, Sessions._merge

    def slow_embed(texts, progress=None):
        time.sleep(0.6)
        if fail:
            raise ToolFailure("embedding failed: the test's embedder")
        return embed(texts, progress)

    def slow_merge(self, session, where):
        time.sleep(0.6)
        return merge(self, session, where)
    monkeypatch.setattr(rt, "embed", slow_embed)
    monkeypatch.setattr(Sessions, "_merge", slow_merge)


def test_an_exchange_is_embedded_while_its_session_row_commits(tmp_path, monkeypatch):
    import time

    rt = Runtime(Settings(home=str(tmp_path / "home"), curation=False).to_config())
    try:
        remember(rt, exchange(0), session_id="live")
        slowed(rt, monkeypatch)
        t0 = time.perf_counter()
        out = remember(rt, exchange(1), session_id="live")
        took = time.perf_counter() - t0
        assert out.stored == 2
        assert took < 1.0, took       # the longer of the two (0.6 s), not their sum (1.2 s)
        space = rt.space("default")
        assert [r.seq for r in space.sources.by_session("live")] == [0, 1, 2, 3]
        hits = space.sources.vector_search(rt.embed(["Answer 1: its disk filled up"])[0], 1)
        assert hits and hits[0][0] == out.source_ids[1]   # stored with its own vector
    finally:
        rt.close()


def test_an_embedding_that_fails_beside_the_commit_stores_nothing(tmp_path, monkeypatch):
    rt = Runtime(Settings(home=str(tmp_path / "home"), curation=False).to_config())
    try:
        remember(rt, exchange(0), session_id="live")
        space = rt.space("default")
        before = space.sessions.get("live")
        slowed(rt, monkeypatch, fail=True)
        try:
            remember(rt, exchange(1), session_id="live")
        except Exception as exc:   # the tool's error, as the host sees it
            assert "embedding failed" in str(exc)
        else:
            raise AssertionError("the failed embedding was not reported")
        monkeypatch.undo()
        space.see_latest("sessions", "sources")
        assert space.sources.count() == 2
        after = space.sessions.get("live")
        assert after is not None and before is not None and after.n_messages == before.n_messages == 2
    finally:
        rt.close()
