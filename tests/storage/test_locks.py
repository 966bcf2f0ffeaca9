"""Locks shared by the processes on one memory folder (``storage/locks.py``): a holder that died
or stopped is taken over, a live one makes the call fail within the wait with a message naming
the lock, and a lock path that is not a regular file is refused at once. Real processes hold
the locks; the calls go through the real MCP client and server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client

from helpers import error_text, payload
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.storage.names import namespace_key

pytestmark = pytest.mark.anyio
posix = pytest.mark.skipif(os.name != "posix", reason="signals and FIFOs")
HOLDER = Path(__file__).with_name("lock_holder.py")
LEASE, WAIT = 2.0, 6.0


def hold(path: Path, lease: float = LEASE, *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, str(HOLDER), str(path), str(lease), *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)
        proc.kill()
    proc.wait()


async def remember(c, k: int):
    return await c.call_tool("remember", {"namespace": "lk", "session_id": "s", "messages": [
        {"content": f"note {k}: the gate code is changed on Mondays", "ref": f"r{k}"}]})


@pytest.fixture
def home(tmp_path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def server(home):
    return build_server(Settings(home=str(home), curation=False, lock_lease_s=LEASE,
                                 lock_wait_s=WAIT))


def lock_of(home: Path) -> Path:
    return home / "_locks" / f"{namespace_key('lk')}.lease"


@posix
@pytest.mark.parametrize("how", ["stopped", "killed"])
async def test_a_holder_that_stopped_or_died_is_taken_over(server, home, how):
    async with Client(server) as c:
        payload(await remember(c, 0))
        proc = hold(lock_of(home))
        try:
            os.kill(proc.pid, signal.SIGSTOP if how == "stopped" else signal.SIGKILL)
            if how == "killed":
                proc.wait()   # reaped, as its parent (a host) does
            t0 = time.monotonic()
            out = payload(await remember(c, 1))
            took = time.monotonic() - t0
        finally:
            end(proc)
    print(f"remember behind a {how} holder: {took:.2f} s (lease {LEASE:g} s, wait {WAIT:g} s)")
    assert out["stored"] == 1
    assert took < WAIT
    if how == "stopped":
        assert took >= LEASE * 0.9   # taken over once the lease ran out, not before
    else:
        assert took < LEASE   # at once: the holder's process is gone


@posix
@pytest.mark.parametrize("age", ["fresh", "old"])
async def test_a_holder_killed_before_it_wrote_its_marker_does_not_lock_the_folder_for_good(
        server, home, age):
    """A process killed between creating the marker (O_EXCL) and writing it leaves an empty
    file, which filelock alone never takes over: every later call failed busy for good."""
    async with Client(server) as c:
        payload(await remember(c, 0))
        path = lock_of(home)
        subprocess.run([sys.executable, "-c", "import os, signal, sys; os.open(sys.argv[1], "
                        "os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600); "
                        "os.kill(os.getpid(), signal.SIGKILL)", str(path)], check=False)
        assert path.stat().st_size == 0
        if age == "old":
            old = time.time() - 3 * LEASE
            os.utime(path, (old, old))
        t0 = time.monotonic()
        out = payload(await remember(c, 1))
        took = time.monotonic() - t0
    print(f"remember behind an empty {age} marker: {took:.2f} s (lease {LEASE:g} s)")
    assert out["stored"] == 1
    if age == "fresh":   # its writer may still be about to write: left alone for a lease
        assert LEASE * 0.9 <= took < WAIT
    else:
        assert took < LEASE
    assert not [p.name for p in path.parent.iterdir() if ".empty." in p.name]


@posix
async def test_a_holder_that_resumes_after_a_takeover_knows_it_lost_the_lock(home):
    from trimem.storage.locks import lease_lock

    path = lock_of(home)
    proc = hold(path)
    try:
        os.kill(proc.pid, signal.SIGSTOP)
        with lease_lock(path, LEASE, WAIT).hold() as mine:
            os.kill(proc.pid, signal.SIGCONT)
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write("\n")
            proc.stdin.flush()
            assert proc.stdout.readline().strip() == "lost"
            proc.wait(10)
            assert not mine.lost()   # its release left the new holder's lock alone
    finally:
        end(proc)


async def test_a_live_holder_makes_the_call_fail_within_the_wait_naming_it(server, home):
    async with Client(server) as c:
        payload(await remember(c, 0))
        proc = hold(lock_of(home))
        try:
            t0 = time.monotonic()
            res = await remember(c, 1)
            took = time.monotonic() - t0
        finally:
            end(proc)
        text = error_text(res)
        assert WAIT <= took < WAIT + 3, took
        assert "busy" in text and str(lock_of(home)) in text and f"process {proc.pid}" in text
        assert "nothing was written" in text
        assert payload(await remember(c, 1))["stored"] == 1   # free again: the retry works


@pytest.mark.parametrize("what", ["fifo", "folder", "locks-is-a-file"])
async def test_a_lock_path_that_is_not_a_regular_file_is_refused_at_once(server, home, what):
    if what == "fifo" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    async with Client(server) as c:
        payload(await remember(c, 0))
        path = lock_of(home)
        path.unlink(missing_ok=True)
        if what == "fifo":
            os.mkfifo(path)
        elif what == "folder":
            path.mkdir()
        else:
            path.parent.rmdir()
            path.parent.write_text("")
        t0 = time.monotonic()
        res = await remember(c, 1)
        took = time.monotonic() - t0
        text = error_text(res)
        assert took < 1.5, took
        want = {"fifo": "a FIFO", "folder": "a folder", "locks-is-a-file": "not a folder"}[what]
        assert want in text and "remove it" in text, text


@posix
async def test_a_stopped_drainer_is_taken_over_after_its_lease(home, monkeypatch):
    from trimem.capture import state

    monkeypatch.setattr(state, "DRAIN_LEASE_S", LEASE)
    cs = state.CaptureState(str(home))
    proc = hold(home, LEASE, "drain")
    try:
        assert cs.drainer_running() and cs.drainer_pid() == proc.pid
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(LEASE + 0.5)
        assert cs.holder_silent() and not cs.drainer_running()   # a hook starts another
        t0 = time.monotonic()
        with cs.drain_lock(LEASE + 2) as got:   # what that new drainer waits for
            assert got
        assert time.monotonic() - t0 < LEASE + 2
    finally:
        end(proc)


@posix
def test_the_running_drainer_is_the_one_started_after_a_killed_holder(home):
    """A killed drainer's lock marker stays behind, naming it; the drainer started in its place
    has not taken the lock yet: the one running is the new one, not the name on the marker."""
    from trimem.capture.state import CaptureState

    cs = CaptureState(str(home))
    killed = hold(home, LEASE, "drain")
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    started = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not cs.drainer_running() and cs.drainer_pid() is None
        cs.mark_starting(started.pid)
        assert cs.drainer_running() and cs.drainer_pid() == started.pid
    finally:
        end(started)
    assert not cs.drainer_running() and cs.drainer_pid() is None

@posix
def test_an_index_build_waits_for_another_process_writing_the_namespace(home):
    """An index build commits a table version: one landing while another process's write was
    between its read and its commit failed that commit, and LanceDB's retries left rewritten
    data files behind, unnamed by any version (a forgotten message's text stayed on disk in
    six of them). So a build takes the namespace's write lock; a search waits for it briefly,
    then searches without the index. Seen failing before: the build committed at once."""
    import pyarrow as pa

    from trimem.storage.derived import READ_INDEX_WAIT_S
    from trimem.tools.runtime import Runtime

    rt = Runtime(Settings(home=str(home), curation=False, lock_lease_s=LEASE,
                          lock_wait_s=WAIT).to_config())
    try:
        space = rt.space("lk")
        schema = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("text", pa.string())])
        space.derived.upsert("notes", schema, [{"id": "n1", "text": "the gate code changes on Mondays"}])
        tbl = space.derived.table("notes")
        assert not tbl.list_indices()
        proc = hold(lock_of(home))
        try:
            t0 = time.monotonic()
            assert space.derived.text_search("notes", "gate code", 3) == []
            took = time.monotonic() - t0
            tbl.checkout_latest()
            assert not tbl.list_indices(), "an index was committed while another process wrote"
            assert READ_INDEX_WAIT_S * 0.9 <= took < READ_INDEX_WAIT_S + 2, took
        finally:
            end(proc)
        assert [r["id"] for r in space.derived.text_search("notes", "gate code", 3)] == ["n1"]
    finally:
        rt.close(30)
