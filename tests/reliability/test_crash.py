"""kill -9 during an 800-turn ingest, 20 times: every acknowledged message survives, once.

Kills are timed from what the driver has done, not from the clock, so that a loaded machine
changes only how long the test takes: 16 rounds kill at a random point of a batch (after 1-4 new
acknowledged batches, within one batch's time: embedding, the writes, curation, and the
frequent compactions the driver asks for), 4 rounds kill during start-up (store open, resume)."""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trimem.server.app import build_server
from trimem.server.settings import Settings

DRIVER = Path(__file__).with_name("crash_driver.py")
# 100 batches: a mid-batch kill comes after 1-4 new acks plus at most the batch in flight, so
# the 16 of them use at most 80 and the ingest cannot end before the last kill. It was 2,000
# turns in batches of 25, which made each batch, compaction and the final curation longer, not
# the kills more varied (224 of the suite's ~1,400 worker-seconds).
TOTAL, BATCH, ROUNDS = 800, 8, 20
PROGRESS_TIMEOUT_S = 300    # a driver that acks nothing new for this long has hung


def acked(ack: Path) -> list[dict]:
    if not ack.exists():
        return []
    return [json.loads(line) for line in ack.read_text().splitlines(keepends=True)
            if line.endswith("\n")]


def batch_seconds(acks: list[dict]) -> float:
    """Median time between two acks of the same driver process: how long one batch takes."""
    gaps = [b["t"] - a["t"] for a, b in zip(acks, acks[1:]) if a.get("pid") == b.get("pid")]
    return statistics.median(gaps) if gaps else 0.5


def wait_for_acks(proc: subprocess.Popen, ack: Path, n: int, log: Path) -> None:
    """Until the ack file holds ``n`` acks or the driver exits; fail if it stops making progress."""
    seen, last = len(acked(ack)), time.monotonic()
    while seen < n and proc.poll() is None:
        time.sleep(0.02)
        now = len(acked(ack))
        if now > seen:
            seen, last = now, time.monotonic()
        elif time.monotonic() - last > PROGRESS_TIMEOUT_S:
            proc.kill()
            pytest.fail(f"no new ack for {PROGRESS_TIMEOUT_S} s: {log.read_text()[-2000:]}")


@pytest.mark.slow
@pytest.mark.timeout(1200)   # 2-6 min by load; its own check fails a driver stuck for 300 s
def test_kill_9_never_loses_or_duplicates_acknowledged_messages(tmp_path):
    home, ack, log = tmp_path / "home", tmp_path / "acks.jsonl", tmp_path / "driver.log"
    rng = random.Random(7)
    cmd = [sys.executable, str(DRIVER), str(home), str(ack), str(TOTAL), str(BATCH)]
    kills, startup = 0, 3.0   # seconds from spawn to the first ack, measured in round 0
    for rnd in range(ROUNDS):
        before = len(acked(ack))
        with open(log, "wb") as err:
            spawned = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
            if rnd % 5 == 4:       # during start-up: before this run's first ack
                time.sleep(rng.uniform(0.3, 0.9) * startup)
            else:
                wait_for_acks(proc, ack, before + 1, log)
                if rnd == 0:
                    startup = time.monotonic() - spawned
                wait_for_acks(proc, ack, before + rng.randint(1, 4), log)
                time.sleep(rng.uniform(0.0, 1.0) * batch_seconds(acked(ack)))
            if proc.poll() is not None:
                assert proc.returncode == 0, log.read_text()[-2000:]
                break
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        kills += 1
        # after every crash the store opens without repair and holds every acknowledged batch
        _check(home, acked(ack))
    with open(log, "wb") as err:                   # finish the ingest, then exit cleanly
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        wait_for_acks(proc, ack, TOTAL // BATCH, log)
        # the driver bounds its curation wait and its close at 600 s each
        assert proc.wait(timeout=1500) == 0, log.read_text()[-3000:]
    ids = _check(home, acked(ack))
    assert kills >= ROUNDS - 2 and len(ids) == TOTAL


def _check(home: Path, acks: list[dict]) -> list[str]:
    if not acks:
        return []
    rt = build_server(Settings(home=str(home), curation=False)).runtime
    try:
        space = rt.space("crash")
        rows = space.sources.all()
        ids = [r.id for r in rows]
        refs = [r.ref for r in rows]
        assert len(ids) == len(set(ids)) and len(refs) == len(set(refs)), "duplicates after a crash"
        want = {i for a in acks for i in a["ids"]}
        assert want <= set(ids), f"{len(want - set(ids))} acknowledged messages lost"
        assert space.sources.fts_search("lantern copper", 3)          # indexes still answer
    finally:
        closed = rt.close(timeout=120)
    assert closed, "the checking runtime did not close"
    return ids
