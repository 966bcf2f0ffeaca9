"""Child process for the kill -9 test: ingests N synthetic turns through the remember tool's code,
appending each acknowledged batch to an ack file (fsync'd) only after remember returned.
On start it resumes after the last acknowledged batch, re-sending the one that was in flight.

Background compaction is made frequent (every 8 commits / 300 rows instead of 64 / 2,000), so
that a small ingest still has kills land while tables are being compacted. A run that is not
killed stops curation and upkeep before it exits (``Runtime.close``): a thread still inside
LanceDB's native code when the interpreter finalizes aborts the process."""

from __future__ import annotations

import json
import os
import sys
import time

from trimem.server.settings import Settings
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

WORDS = "river lantern copper meadow violin harbor pepper glacier orbit saffron cedar quartz".split()
OPTIMIZE_EVERY_COMMITS, OPTIMIZE_EVERY_ROWS = 8, 300


def turn(i: int) -> str:
    w = [WORDS[(i * k + k) % len(WORDS)] for k in range(1, 7)]
    return f"Turn {i}: we talked about the {w[0]} near the {w[1]}, then {w[2]}, {w[3]} and {w[4]}."


def main(home: str, ack_path: str, total: int, batch: int) -> int:
    done = 0
    if os.path.exists(ack_path):
        with open(ack_path) as f:
            done = sum(1 for line in f if line.endswith("\n"))  # a torn last line is not an ack
    rt = Runtime(Settings(home=home).to_config())
    store = rt.store
    store.optimize_every_commits, store.optimize_every_rows = OPTIMIZE_EVERY_COMMITS, OPTIMIZE_EVERY_ROWS
    try:
        with open(ack_path, "a") as ack:
            for b in range(done, total // batch):
                msgs = [Message(content=turn(i), speaker="u", ref=f"r{i}")
                        for i in range(b * batch, (b + 1) * batch)]
                res = remember(rt, msgs, session_id=f"s{b // 10}", namespace="crash")
                ack.write(json.dumps({"batch": b, "ids": res.source_ids, "pid": os.getpid(),
                                      "t": time.monotonic()}) + "\n")
                ack.flush()
                os.fsync(ack.fileno())
        idle = rt.curation.wait_idle(600)
    finally:
        closed = rt.close(timeout=600)
    if not (idle and closed):
        print(f"crash_driver: curation idle={idle}, runtime closed={closed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
