"""A session's row and its messages' refs are kept by table version (``storage/versioned.py``):
a ``remember`` into a live session reads neither again while nothing else wrote, and any other
write (another process, a forget, a compaction) makes the next read go to LanceDB. Real
LanceDB in a temp folder; a second ``Store`` on the same folder is the other process."""

from __future__ import annotations

import threading

from lancedb.table import LanceTable

from trimem.server.settings import Settings
from trimem.storage.versioned import Versioned
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime


def exchange(i: int) -> list[Message]:
    return [Message(content=f"Question {i}: where did the spare key end up?", speaker="user",
                    ref=f"u{i}"),
            Message(content=f"Answer {i}: in the blue drawer by the door.", speaker="assistant",
                    ref=f"a{i}")]


def runtime(home) -> Runtime:
    """A runtime whose store compacts only when a test says so (a compaction moves a table's
    version, and the next read rightly goes to LanceDB: not what these tests count)."""
    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    st = rt.space("default").store
    st.optimize_every_commits, st.optimize_every_rows, st.optimize_idle_s = 10**9, 10**9, 10**9
    return rt


def scans(monkeypatch) -> list[str]:
    """The filters of the reads this thread sends to LanceDB from now on (not another test's
    threads still winding down in this process)."""
    from trimem.storage import scan as scan_mod
    from trimem.storage import sessions, sources

    seen: list[str] = []
    real, me = scan_mod.scan_rows, threading.get_ident()

    def counted(tbl, where, *a, **kw):
        if threading.get_ident() == me:
            seen.append(f"{tbl.name}: {where}")
        return real(tbl, where, *a, **kw)
    monkeypatch.setattr(sessions, "scan_rows", counted)
    monkeypatch.setattr(sources, "scan_rows", counted)
    return seen


def fresh(home):
    """What a new process reads: the session row and refs straight from LanceDB."""
    rt = runtime(home)
    try:
        sp = rt.space("default")
        return sp.sessions.get("live"), sorted(sp.sources.session_refs("live"))
    finally:
        rt.close()


def test_a_live_session_is_read_from_lancedb_once_and_kept_as_it_is_stored(tmp_path, monkeypatch):
    home = tmp_path / "home"
    rt = runtime(home)
    try:
        remember(rt, exchange(0), session_id="live")   # creates the tables (and their indexes)
        remember(rt, exchange(1), session_id="live")   # reads the row and the refs once
        seen = scans(monkeypatch)
        for i in range(2, 4):
            remember(rt, exchange(i), session_id="live")
        # after that, this process's own commits told it what the tables hold
        assert seen == [], seen
        sp = rt.space("default")
        kept = sp.sessions.get("live"), sorted(sp.sources.session_refs("live"))
        assert seen == []
        monkeypatch.undo()
        assert kept == fresh(home)          # what is kept equals a fresh read, field for field
        assert kept[0] is not None and kept[0].n_messages == 8
        assert [r.seq for r in sp.sources.by_session("live")] == list(range(8))
    finally:
        rt.close()


def test_a_write_by_another_process_is_read_again(tmp_path, monkeypatch):
    home = tmp_path / "home"
    rt, other = runtime(home), runtime(home)
    try:
        remember(rt, exchange(0), session_id="live")
        remember(rt, exchange(1), session_id="live")
        remember(other, exchange(2), session_id="live")   # moves both tables' versions
        seen = scans(monkeypatch)
        out = remember(rt, exchange(3), session_id="live")
        assert len(seen) == 2, seen          # the session row and the refs, read again
        assert out.stored == 2
        again = remember(rt, exchange(2), session_id="live")   # the other's refs are known
        assert again.stored == 0
        monkeypatch.undo()
        sess, refs = fresh(home)
        assert sess is not None and sess.n_messages == 8 and len(refs) == 8
    finally:
        rt.close()
        other.close()


def test_a_forget_or_a_compaction_moves_the_version_and_nothing_stale_is_served(tmp_path,
                                                                                 monkeypatch):
    home = tmp_path / "home"
    rt = runtime(home)
    try:
        out = remember(rt, exchange(0), session_id="live")
        remember(rt, exchange(1), session_id="live")
        sp = rt.space("default")
        sp.sources.delete(out.source_ids[:1])       # what forget deletes
        assert sorted(str(r) for _, r in sp.sources.session_refs("live")) == ["a0", "a1", "u1"]
        tbl = sp.sources.table()
        before = tbl.version
        tbl.optimize()                              # a compaction: same rows, new version
        assert tbl.version != before
        seen = scans(monkeypatch)
        assert sorted(str(r) for _, r in sp.sources.session_refs("live")) == ["a0", "a1", "u1"]
        assert len(seen) == 1
    finally:
        rt.close()


def test_only_values_true_just_before_a_commit_move_with_it():
    kept: Versioned[str, int | None] = Versioned(keep=2)
    kept.put("a", 4, 1)
    kept.put("b", 3, 1)
    kept.advanced(5, lambda k, v: (v or 0) + 10)
    assert kept.get("a", 5) == (11,)      # true at 4, patched to 5
    assert kept.get("b", 5) is None       # true at 3 only: a commit it did not see came between
    assert kept.get("a", 4) is None       # the version moved
    kept.put("c", 5, None)
    assert kept.get("c", 5) == (None,)    # a session with no row yet is a value too
    assert kept.get("b", 3) is None       # the least recently used past ``keep`` is let go
    assert kept.get("a", 5) == (11,)


def test_lancedb_reports_the_version_each_commit_made(tmp_path):
    """What the keeping rests on: add and merge_insert return the version they committed,
    the one after the version before."""
    rt = runtime(tmp_path / "home")
    try:
        remember(rt, exchange(0), session_id="live")
        tbl: LanceTable = rt.space("default").sources.table()
        v = tbl.version
        got = tbl.add(tbl.search().limit(1).to_arrow())
        assert got.version == v + 1 == tbl.version
    finally:
        rt.close()


def test_remembers_audit_entries_are_all_written_by_close(tmp_path):
    """``remember``'s audit entries are appended off its path (``Log.audit(queued=True)``):
    another process reads every one once this one has closed, in the order they were made."""
    home = tmp_path / "home"
    rt = runtime(home)
    ids = [remember(rt, exchange(i), session_id="live").source_ids for i in range(5)]
    rt.close()
    other = runtime(home)
    try:
        got = [a["target_ids"] for a in other.space("default").log.audit_log()
               if a["op"] == "remember"]
        assert got == ids
    finally:
        other.close()


def test_curation_marks_a_session_done_only_if_no_message_came_meanwhile(tmp_path):
    """Curation read the session (n messages), curated, then marks it: a remember by another
    process in between (more messages, "queued") is not written back over."""
    home = tmp_path / "home"
    rt, other = runtime(home), runtime(home)
    try:
        remember(rt, exchange(0), session_id="live")
        sp = rt.space("default")
        seen = sp.sessions.get("live")
        assert seen is not None and seen.n_messages == 2
        remember(other, exchange(1), session_id="live")          # while curation ran
        assert other.space("default").sessions.set_curation("live", "queued", 4)  # as it queues
        assert not sp.sessions.set_curation("live", "done", seen.n_messages)
        sp.see_latest("sessions")
        now = sp.sessions.get("live")
        assert now is not None and (now.n_messages, now.curation) == (4, "queued")
        assert sp.sessions.set_curation("live", "done", 4)
        sp.see_latest("sessions")
        again, mine = fresh(home)[0], sp.sessions.get("live")
        assert again is not None and again.curation == "done"   # and a new process reads it so
        assert mine is not None and mine.curation == "done"
    finally:
        rt.close()
        other.close()


def test_a_session_that_grew_while_it_was_curated_stays_queued(tmp_path, monkeypatch):
    """Messages another process stored while this one curated the session are not marked
    curated with it: the session stays "queued" (was "done": curation read the row after its
    work and wrote it back with its own state)."""
    from trimem.tools import curation

    home = tmp_path / "home"
    rt = Runtime(Settings(home=str(home), curation=True).to_config())
    other = Runtime(Settings(home=str(home), curation=True).to_config())
    # the other process marks what it stores "queued" and curates it later (not in this test)
    monkeypatch.setattr(other.curation, "enqueue", lambda *a, **kw: None)
    real = curation._fenced_curate
    grew: list[int] = []
    once = threading.Lock()

    def curate_while_another_remembers(env, strat, session_id):
        with once:   # once, during the first strategy's work (two may curate side by side)
            if not grew:
                grew.append(remember(other, exchange(1), session_id="live").stored)
        return real(env, strat, session_id)
    try:
        remember(rt, exchange(0), session_id="live")
        rt.curation.wait_idle()
        monkeypatch.setattr(curation, "_fenced_curate", curate_while_another_remembers)
        rt.space("default").sessions.set_curation("live", "queued", 2)
        rt.curation.curate_now("default", "live")
        assert grew == [2]
        sess = fresh(home)[0]
        assert sess is not None and (sess.n_messages, sess.curation) == (4, "queued")
    finally:
        rt.close()
        other.close()


def test_a_recall_records_write_under_the_lock_does_not_wait_for_queued_audit_entries(tmp_path):
    """The audit writer's thread takes the namespace's lock for each batch; a recall record's
    write holds that lock and flushes the recall log (pruning reads it). Flushing the audit
    entries there too waited for a batch that waited for the lock: the eight-clients test hung
    until its 30 s lock waits failed."""
    import time

    rt = runtime(tmp_path / "home")
    try:
        space = rt.space("default")
        remember(rt, exchange(0), session_id="live")   # the first audit entry is written at once
        done = threading.Event()

        def holder() -> None:
            with space.store.write_lock("default"):
                space.log.audit("remember", ["x"], {}, queued=True)   # its writer now waits
                time.sleep(0.3)
                space.log.flush()                                     # as pruning does
            done.set()
        t = threading.Thread(target=holder, daemon=True)
        t.start()
        assert done.wait(10), "a flush under the lock waited for the audit writer"
        assert [a["target_ids"] for a in space.log.audit_log()][-1] == ["x"]
    finally:
        rt.close()
