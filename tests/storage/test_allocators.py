"""A quiet server gives back what its calls freed: one trim after a burst of calls, never
before ``delay`` has passed since the last of them, and each `remember` and `recall` asks
for it."""

from __future__ import annotations

import threading
import time

import pytest

from helpers import payload
from trimem.storage import allocators
from trimem.storage.allocators import IdleTrim


def wait_for(cond, timeout: float = 20.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def test_a_burst_of_calls_is_followed_by_one_trim_after_the_last():
    calls: list[float] = []
    idle = IdleTrim(lambda: calls.append(time.monotonic()), delay=1.0)
    pokes: list[float] = []
    for _ in range(10):                    # a burst: 20 ms between two calls
        pokes.append(time.monotonic())     # before the poke: its deadline is at least this + 1 s
        idle.poke()
        time.sleep(0.02)
    # the thread ends once no trim is due: every poke has been served
    assert wait_for(lambda: idle.done >= 1 and idle._thread is None)
    assert calls[-1] >= pokes[-1] + 1.0    # never early: a full delay after the last call
    gaps = [b - a for a, b in zip(pokes, pokes[1:])]
    if max(gaps) < 0.5:                    # no stall of this thread within the burst (load)
        assert len(calls) == 1             # one trim for the whole burst
    n = len(calls)
    idle.poke()                            # the next burst gets its own trim
    assert wait_for(lambda: len(calls) == n + 1)


def test_pokes_from_many_threads_give_one_trim():
    idle = IdleTrim(lambda: None, delay=1.0)
    threads = [threading.Thread(target=lambda: [idle.poke() for _ in range(200)])
               for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wait_for(lambda: idle.done >= 1)
    time.sleep(1.2)   # longer than the delay: a second trim would have come
    assert idle.done == 1 and idle._thread is None


@pytest.mark.anyio
@pytest.mark.skipif(allocators._glibc() is None, reason="malloc_trim is glibc's")
async def test_remember_and_recall_each_ask_for_a_trim_once_calls_pause(client, monkeypatch):
    monkeypatch.setattr(allocators.IDLE, "delay", 0.2)
    assert wait_for(lambda: allocators.IDLE._thread is None)   # an earlier test's trim is made
    before = allocators.IDLE.done
    payload(await client.call_tool("remember", {"messages": [
        {"content": "The boiler was serviced in March.", "speaker": "user", "ref": "t1"}]}))
    assert wait_for(lambda: allocators.IDLE.done == before + 1)
    payload(await client.call_tool("recall", {"query": "When was the boiler serviced?"}))
    assert wait_for(lambda: allocators.IDLE.done == before + 2)


def test_the_heap_counts_what_malloc_holds_in_use_and_free():
    """``heap`` (the benchmarks' view of glibc's malloc) sees a 64 MB buffer in use while it
    lives and not after it is freed."""
    import numpy as np

    if allocators.heap() is None:
        pytest.skip("not glibc 2.33+")
    allocators.trim()
    before = allocators.heap()
    assert before is not None and min(before.values()) >= 0
    buf = np.ones(64 * 2**20, dtype=np.uint8)
    held = allocators.heap()
    assert held is not None
    assert held["in_use"] + held["mapped"] - before["in_use"] - before["mapped"] >= 60
    del buf
    after = allocators.heap()
    assert after is not None
    assert after["in_use"] + after["mapped"] - before["in_use"] - before["mapped"] < 8


MAPPED_PROBE = """
import json, sys
import numpy as np
from trimem.storage import allocators
if sys.argv[1] == "settled":
    allocators.settle()
big = np.ones(16 * 2**20, dtype=np.uint8)   # freed: glibc's default threshold rises to 16 MiB
del big
before = allocators.heap()["mapped"]
mid = np.ones(4 * 2**20, dtype=np.uint8)
print(json.dumps(allocators.heap()["mapped"] - before))
"""


def test_a_settled_process_maps_large_blocks_on_their_own_after_larger_ones_were_freed():
    """A fresh process each (the threshold is the process's): with glibc's dynamic threshold a
    4 MiB array made after a 16 MiB one was freed comes from the heap, where freeing it keeps
    it resident; once ``settle`` fixed the threshold it is mapped on its own."""
    import json
    import subprocess
    import sys

    if allocators.heap() is None:
        pytest.skip("not glibc 2.33+")
    env = {k: v for k, v in __import__("os").environ.items()
           if k not in ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")}

    def mapped(mode: str) -> float:
        out = subprocess.run([sys.executable, "-c", MAPPED_PROBE, mode], env=env, check=True,
                             capture_output=True, text=True, timeout=60).stdout
        return json.loads(out.strip().splitlines()[-1])

    assert mapped("default") < 1
    assert mapped("settled") >= 4
