"""Child process for the kill -9 test: ingests N synthetic turns through the remember tool's code,
appending each acknowledged batch to an ack file (fsync'd) only after remember returned.
On start it resumes after the last acknowledged batch, re-sending the one that was in flight."""

from __future__ import annotations

import json
import os
import sys

from trimem.server.settings import Settings
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

WORDS = "river lantern copper meadow violin harbor pepper glacier orbit saffron cedar quartz".split()


def turn(i: int) -> str:
    w = [WORDS[(i * k + k) % len(WORDS)] for k in range(1, 7)]
    return f"Turn {i}: we talked about the {w[0]} near the {w[1]}, then {w[2]}, {w[3]} and {w[4]}."


def main(home: str, ack_path: str, total: int, batch: int) -> None:
    done = 0
    if os.path.exists(ack_path):
        with open(ack_path) as f:
            done = sum(1 for line in f if line.endswith("\n"))  # a torn last line is not an ack
    rt = Runtime(Settings(home=home).to_config())
    with open(ack_path, "a") as ack:
        for b in range(done, total // batch):
            msgs = [Message(content=turn(i), speaker="u", ref=f"r{i}")
                    for i in range(b * batch, (b + 1) * batch)]
            res = remember(rt, msgs, session_id=f"s{b // 10}", namespace="crash")
            ack.write(json.dumps({"batch": b, "ids": res.source_ids}) + "\n")
            ack.flush()
            os.fsync(ack.fileno())
    rt.curation.wait_idle(60)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
