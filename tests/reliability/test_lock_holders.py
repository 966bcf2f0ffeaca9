"""A process holding a namespace's lock in the middle of ``remember`` is killed (SIGKILL) or
stopped (SIGSTOP); another process's ``remember`` of the same refs (a host's retry) finishes
within the lock's bound, and nothing acknowledged is lost or stored twice, also after the
stopped holder resumes (bench/locks.py, with a short lease and one round of each)."""

from __future__ import annotations

import os

import pytest

from trimem.bench.locks import rounds

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="signals")]
LEASE, WAIT = 2.0, 10.0


def test_a_killed_or_stopped_holder_delays_the_other_call_within_the_bound(tmp_path):
    out = rounds(str(tmp_path / "home"), 1, lease=LEASE, wait=WAIT)
    print({k: out[k] for k in ("taken", "took", "held", "acked")})
    assert out["held"] == {"kill": 1, "stop": 1}        # signalled while holding the lock
    assert max(out["taken"]["kill"]) < LEASE           # a dead holder: taken over at once
    assert LEASE * 0.9 <= max(out["taken"]["stop"]) < WAIT
    assert max(out["took"]["kill"] + out["took"]["stop"]) < WAIT
    assert out["acked"] > 0
    assert not out["lost"] and not out["doubled"] and not out["ids_doubled"]
