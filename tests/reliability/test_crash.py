"""kill -9 during a 5,000-turn ingest, 20 times: every acknowledged message survives, once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trimem.server.app import build_server
from trimem.server.settings import Settings

DRIVER = Path(__file__).with_name("crash_driver.py")
TOTAL, BATCH, ROUNDS = 5000, 25, 20


def acked(ack: Path) -> list[dict]:
    if not ack.exists():
        return []
    return [json.loads(line) for line in ack.read_text().splitlines(keepends=True)
            if line.endswith("\n")]


@pytest.mark.slow
def test_kill_9_never_loses_or_duplicates_acknowledged_messages(tmp_path):
    home, ack = tmp_path / "home", tmp_path / "acks.jsonl"
    rng = random.Random(7)
    cmd = [sys.executable, str(DRIVER), str(home), str(ack), str(TOTAL), str(BATCH)]
    kills = 0
    for _ in range(ROUNDS):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(1.5, 4.0))   # model load, store open, and some batches
        if proc.poll() is not None:
            assert proc.returncode == 0, proc.stderr.read().decode()[-2000:]
            break
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kills += 1
        # after every crash the store opens without repair and holds every acknowledged batch
        _check(home, acked(ack))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=900)   # finish the ingest
    ids = _check(home, acked(ack))
    assert kills >= ROUNDS - 2 and len(ids) == TOTAL


def _check(home: Path, acks: list[dict]) -> list[str]:
    if not acks:
        return []
    space = build_server(Settings(home=str(home))).runtime.space("crash")
    rows = space.all_sources()
    ids = [r["id"] for r in rows]
    refs = [r["ref"] for r in rows]
    assert len(ids) == len(set(ids)) and len(refs) == len(set(refs)), "duplicates after a crash"
    want = {i for a in acks for i in a["ids"]}
    assert want <= set(ids), f"{len(want - set(ids))} acknowledged messages lost"
    assert space.fts_sources("lantern copper", 3)          # indexes still answer
    return ids
