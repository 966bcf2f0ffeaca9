"""The recall log is written off the response path (``storage/recall_writer.py``): a recall
answers before its record is appended, records that queue up are appended together, and every
reader of the log (explain, forget) writes the queue first. The writer's batches are held with a
gate around the real write: the gate only delays the real LanceDB append, it replaces nothing."""

from __future__ import annotations

import threading
import time

import pytest
from mcp import Client

from helpers import error_text, payload
from trimem.storage.space import Space

pytestmark = pytest.mark.anyio
SECRET = "qx-hold-5519-larkspur"


class Gate:
    """Wraps a space's recall-log write: each batch waits for ``open()`` and is recorded."""

    def __init__(self, space):
        self.writer = space.log._recall_writer
        self.real = self.writer._write
        self.event = threading.Event()
        self.batches: list[int] = []
        self.writer._write = self

    def __call__(self, rows):
        self.batches.append(len(rows))
        assert self.event.wait(30), "the gate was never opened"
        self.real(rows)

    def held(self, n: int) -> list[int]:
        """The batches once ``n`` of them reached the gate (the writer's thread picks a queued
        record up a moment after the recall answered)."""
        end = time.monotonic() + 10
        while len(self.batches) < n and time.monotonic() < end:
            time.sleep(0.01)
        return self.batches

    def open_later(self, seconds: float = 0.5) -> None:
        threading.Timer(seconds, self.event.set).start()


async def setup(c, server, text: str = "The hangar door code is 5519.") -> Space:
    payload(await c.call_tool("remember", {"namespace": "main", "session_id": "s1",
                                           "messages": [{"content": text, "ref": "h1"}]}))
    space = server.runtime.space("main")
    first = await recall(c, "hangar door code")   # a process's first record is written at once
    assert "not logged" not in first["route_reason"]
    return space


async def held_recalls(c, server, n: int):
    """The space, its gate and ``n`` recall ids: the first record is held at the gate, the
    other ``n - 1`` are queued behind it."""
    space = await setup(c, server)
    gate = Gate(space)
    ids = [(await recall(c, f"door code {k}"))["recall_id"] for k in range(n)]
    assert gate.held(1) == [1] and space.log._recall_writer.queued == n - 1
    return space, gate, ids


async def recall(c, query: str) -> dict:
    return payload(await c.call_tool("recall", {"query": query, "namespace": "main",
                                                "strategy": "plain"}))


async def test_recall_answers_before_its_record_is_written_and_explain_waits_for_it(server):
    async with Client(server) as c:
        # all three answered while the first record's append is still held at the gate
        _, gate, ids = await held_recalls(c, server, 3)
        gate.open_later()
        out = payload(await c.call_tool("explain", {"id": ids[-1], "namespace": "main"}))
        assert "door code 2" in out["summary"]
        assert gate.batches == [1, 2]     # what queued behind the held append went in one add
        for rid in ids:
            assert payload(await c.call_tool("explain", {"id": rid, "namespace": "main"}))


async def test_a_forget_right_after_a_recall_scrubs_its_queued_record(server, home):
    async with Client(server) as c:
        space = await setup(c, server, f"The hangar vault phrase is {SECRET}.")
        gate = Gate(space)
        rid = (await recall(c, "hangar vault phrase"))["recall_id"]
        assert gate.held(1) == [1]
        gate.open_later()
        payload(await c.call_tool("forget", {"namespace": "main", "refs": ["h1"]}))
        res = await c.call_tool("explain", {"id": rid, "namespace": "main"})
        assert res.is_error and "no recall" in error_text(res)


async def test_a_failed_background_write_makes_the_next_recall_say_not_logged(server):
    async with Client(server) as c:
        space = await setup(c, server)
        writer = space.log._recall_writer

        def disk_full(rows):   # what LanceDB raises on a full disk (tests/reliability/test_disk.py)
            raise OSError(28, "No space left on device")

        real, writer._write = writer._write, disk_full
        lost = (await recall(c, "door code"))["recall_id"]   # answered; its record is lost
        space.log.flush()
        out = await recall(c, "door code again")             # written synchronously: it says so
        assert "not logged" in out["route_reason"]
        writer._write = real
        again = await recall(c, "door code once more")       # a synchronous write succeeds
        assert "not logged" not in again["route_reason"]
        res = await c.call_tool("explain", {"id": lost, "namespace": "main"})
        assert res.is_error
        assert payload(await c.call_tool("explain", {"id": again["recall_id"], "namespace": "main"}))


async def test_a_clean_stop_writes_the_queued_records_first(server, home):
    from trimem.server.settings import Settings
    from trimem.tools.runtime import Runtime

    async with Client(server) as c:
        _, gate, ids = await held_recalls(c, server, 2)
    gate.open_later()
    assert server.runtime.close(30)          # what SIGTERM or a closed stdin runs
    assert gate.batches == [1, 1]
    reader = Runtime(Settings(home=str(home), curation=False).to_config())
    try:
        for rid in ids:                      # a new process finds both, at once
            assert reader.space("main").log.get_recall(rid).query.startswith("door code")
    finally:
        reader.close(10)
