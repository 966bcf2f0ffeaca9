"""The drainer killed (SIGKILL) in the middle of storing, again and again: the next hook's
drainer catches up, nothing is lost and nothing is stored twice."""

from __future__ import annotations

import os
import signal
import time

import pytest
from hookrun import hook_env, run_hook, settle, stored

from trimem.bench.cc_transcript import Transcript
from trimem.capture.state import CaptureState

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="SIGKILL")]


def _wait_drainer(state: CaptureState, timeout: float = 30) -> int | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pid = state.drainer_pid()
        if pid:
            return pid
        time.sleep(0.05)
    return None


@pytest.mark.timeout(900)   # kill -9 rounds of real hook and drainer processes
def test_kill_nine_during_capture_loses_and_doubles_nothing(tmp_path):
    home = tmp_path / "home"
    env = hook_env(home, tmp_path, TRIMEM_HOOK_NAMESPACE="crash")
    state = CaptureState(str(home))
    t = Transcript(path=tmp_path / "t.jsonl", session_id="s1", cwd=str(tmp_path))
    killed = 0
    for rnd in range(5):
        for i in range(40):
            ts = f"2026-11-10T{rnd + 10}:{i:02d}:00Z"
            t.user(f"round {rnd} question {i}: how does part {i} of the build work?", ts)
            t.assistant(f"round {rnd} answer {i}: part {i} compiles first, then links. " * 20, ts)
        assert run_hook(t.hook_input("Stop"), env).returncode == 0
        pid = _wait_drainer(state)
        assert pid, "no drainer started"
        time.sleep(1.0 + 0.7 * rnd)      # from before the store opens to mid-way through
        if state.drainer_pid() == pid:   # still running (it may have finished its work)
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while state.drainer_running() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert killed >= 3
    assert state.pending()                # the killed drainers left their markers
    assert run_hook(t.hook_input("SessionEnd"), env).returncode == 0
    settle(home)
    refs = [r.ref for r in stored(home, "crash")]
    assert len(refs) == len(set(refs)), "a message was stored twice"
    assert set(refs) == set(t.uuids), "a message was lost"
