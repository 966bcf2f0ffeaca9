"""The background curation worker, driven by a small real strategy plug-in."""

from __future__ import annotations

import pyarrow as pa
import pytest

from helpers import payload, resource_text, session, turns
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies import registry
from trimem.strategies.base import Curates
from trimem.strategies.plain.strategy import PlainStrategy

pytestmark = pytest.mark.anyio
COUNTS = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("session_id", pa.string()),
                    ("n", pa.int64()), ("source_ids", pa.list_(pa.string()))])


class Counter(PlainStrategy):
    """Curates each session into one row: how many sources it has (rebuilt, so idempotent)."""

    name = "counter"

    def curate(self, env, session_id):
        rows = env.space.sources.by_session(session_id)
        env.space.derived.upsert("counts", COUNTS, [{"id": session_id, "session_id": session_id,
                                             "n": len(rows), "source_ids": [r.id for r in rows]}])

    def forget(self, env, source_ids):
        hit = [r["id"] for r in env.space.derived.rows("counts") if source_ids & set(r["source_ids"])]
        env.space.derived.delete_rows("counts", {"id": hit})
        return len(hit)


@pytest.fixture
def counter(monkeypatch):
    monkeypatch.setitem(registry._BUILTIN, "counter", f"{__name__}:Counter")
    monkeypatch.setattr(registry, "_loaded", {"counter": Counter()})


async def test_remember_queues_and_the_worker_curates(counter, client, server):
    res = payload(await client.call_tool("remember", {"messages": turns("a", "b"), "session_id": "s"}))
    assert res["curation"] == "queued"
    payload(await client.call_tool("remember", {"messages": turns("c", prefix="x"), "session_id": "s"}))
    rt = server.runtime
    assert rt.curation.wait_idle(30)
    space = rt.space("default")
    assert session(space, "s").curation == "done"
    assert [(r["id"], r["n"]) for r in space.derived.rows("counts")] == [("s", 3)]
    out = payload(await client.call_tool("forget", {"refs": ["x1"]}))
    assert out["removed_sources"] == 1
    assert rt.curation.wait_idle(30)               # the rest of the session is curated again
    assert [(r["id"], r["n"]) for r in space.derived.rows("counts")] == [("s", 2)]


async def test_queued_sessions_resume_after_a_restart(counter, home, tmp_path_factory):
    from mcp import Client

    first = build_server(Settings(home=str(home)))
    first.runtime.curation.delay_s = 3600          # the process "dies" before curating
    async with Client(first) as c:
        payload(await c.call_tool("remember", {"messages": turns("a"), "session_id": "s"}))
    assert session(first.runtime.space("default"), "s").curation == "queued"

    second = build_server(Settings(home=str(home)))
    space = second.runtime.space("default")        # opening the store resumes the queue
    assert second.runtime.curation.wait_idle(30)
    assert session(space, "s").curation == "done"
    assert [r["n"] for r in space.derived.rows("counts")] == [1]


async def test_switched_off_curation_resumes_nothing(counter, home, tmp_path_factory):
    """TRIMEM_CURATION=false keeps raw sources only: a session left queued by an earlier
    process stays queued (it is curated when curation is switched back on)."""
    from mcp import Client

    first = build_server(Settings(home=str(home)))
    first.runtime.curation.delay_s = 3600
    async with Client(first) as c:
        payload(await c.call_tool("remember", {"messages": turns("a"), "session_id": "s"}))
    off = build_server(Settings(home=str(home), curation=False))
    space = off.runtime.space("default")
    assert off.runtime.curation.wait_idle(30)
    assert session(space, "s").curation == "queued" and space.derived.rows("counts") == []
    on = build_server(Settings(home=str(home)))
    assert on.runtime.space("default") is not None and on.runtime.curation.wait_idle(30)
    assert [r["n"] for r in on.runtime.space("default").derived.rows("counts")] == [1]


async def test_curation_can_be_switched_off(counter, home, tmp_path_factory):
    from mcp import Client

    server = build_server(Settings(home=str(home), curation=False))
    async with Client(server) as c:
        res = payload(await c.call_tool("remember", {"messages": turns("a"), "session_id": "s"}))
    assert res["curation"] == "done"
    space = server.runtime.space("default")
    assert session(space, "s").curation == "done" and space.derived.rows("counts") == []


async def test_curation_lets_a_running_recall_pass_but_is_never_starved(counter, client, server,
                                                                         monkeypatch):
    import time

    from trimem.tools import curation

    rt = server.runtime
    monkeypatch.setattr(curation, "YIELD_MAX_S", 30.0)
    with rt.recalls:                                  # a recall is running
        payload(await client.call_tool("remember", {"messages": turns("a"), "session_id": "s"}))
        time.sleep(0.5)
        assert session(rt.space("default"), "s").curation == "queued"
    assert rt.curation.wait_idle(30)                  # the recall ended: curation goes on
    assert session(rt.space("default"), "s").curation == "done"

    monkeypatch.setattr(curation, "YIELD_MAX_S", 0.2)
    with rt.recalls:                                  # recalls that never stop: curation waits
        payload(await client.call_tool("remember", {"messages": turns("b"), "session_id": "t"}))
        assert rt.curation.wait_idle(30)              # at most YIELD_MAX_S per step, then runs
        assert session(rt.space("default"), "t").curation == "done"


def _done_within(space, sids, seconds: float) -> bool:
    """Whether every session of ``sids`` is curated within ``seconds`` (no wait_idle: it
    would not wait for writes to pause)."""
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if all(session(space, s).curation == "done" for s in sids):
            return True
        time.sleep(0.1)
    return False


async def test_curation_starts_no_session_while_writes_keep_arriving(counter, client, server,
                                                                      monkeypatch):
    import time

    from trimem.tools import curation

    rt = server.runtime
    monkeypatch.setattr(curation, "WRITE_QUIET_S", 3.0)
    started: list[float] = []
    orig = rt.curation.curate_now

    def spy(ns, sid, *args, **kwargs):
        started.append(time.monotonic())
        return orig(ns, sid, *args, **kwargs)

    monkeypatch.setattr(rt.curation, "curate_now", spy)
    for i in range(5):   # calls back to back, as an import or a long transcript makes them
        payload(await client.call_tool("remember", {"messages": turns(f"m{i}"),
                                                    "session_id": f"s{i}"}))
        time.sleep(0.1)
    last = time.monotonic()
    assert started == [] and session(rt.space("default"), "s0").curation == "queued"
    sids = [f"s{i}" for i in range(5)]
    assert _done_within(rt.space("default"), sids, 60)   # the writes paused: it curates by itself
    assert min(started) - last > 2.0                      # after the quiet period, not before


async def test_curation_lets_a_running_write_pass_and_then_curates(counter, client, server):
    import time

    rt = server.runtime
    with rt.writes:                                   # another remember is running
        payload(await client.call_tool("remember", {"messages": turns("a"), "session_id": "s"}))
        time.sleep(1.0)
        assert session(rt.space("default"), "s").curation == "queued"
    assert _done_within(rt.space("default"), ["s"], 30)


async def test_writes_that_never_pause_defer_curation_only_so_long(counter, client, server,
                                                                   monkeypatch):
    from trimem.tools import curation

    rt = server.runtime
    monkeypatch.setattr(curation, "DEFER_MAX_S", 0.5)
    monkeypatch.setattr(curation, "YIELD_MAX_S", 0.2)
    with rt.writes:                                   # a write that never ends
        payload(await client.call_tool("remember", {"messages": turns("a"), "session_id": "s"}))
        assert _done_within(rt.space("default"), ["s"], 30)
        payload(await client.call_tool("remember", {"messages": turns("b"), "session_id": "t"}))
        monkeypatch.setattr(curation, "DEFER_MAX_S", 3600.0)
        assert rt.curation.wait_idle(30)              # who waits for curation does not wait
        assert session(rt.space("default"), "t").curation == "done"   # for a pause


def test_strategies_curating_side_by_side_give_what_one_at_a_time_gives(tmp_path, monkeypatch):
    """On two cores the worker's thread and a second one take the curating strategies from one
    queue: both threads really run strategies, and every strategy then recalls exactly what it
    recalls from the same sessions curated one strategy at a time."""
    import threading

    from trimem.bench.synth import Synth
    from trimem.tools.recall import recall
    from trimem.tools.remember import Message, remember
    from trimem.tools.runtime import Runtime

    seen: dict[str, set[str]] = {}
    for strat in registry.with_hook(Curates):
        def spy(env, sid, _orig=strat.curate, _name=strat.name):
            seen.setdefault(_name, set()).add(threading.current_thread().name)
            return _orig(env, sid)
        monkeypatch.setattr(strat, "curate", spy)
    synth, sessions, n = Synth(seed=3), [], 0
    for sid, when, msgs in synth.sessions():
        sessions.append((sid, when, msgs))
        n += len(msgs)
        if n >= 120:
            break
    questions = synth.pick_questions(4, seed=n)
    contexts = []
    for threads in (1, 2):
        rt = Runtime(Settings(home=str(tmp_path / f"t{threads}")).to_config())
        try:
            rt.curation.threads = threads
            for sid, when, msgs in sessions:
                remember(rt, [Message(**m) for m in msgs], session_id=sid, session_time=when)
            assert rt.curation.wait_idle(120) and not rt.curation.failures
            contexts.append({(s, q): recall(rt, q, s, "default", 600).context
                             for s in ("hybrid", "workspace", "wiki", "auto") for q in questions})
        finally:
            rt.close(timeout=60)
    assert questions and contexts[0] == contexts[1]
    assert set(seen) == {s.name for s in registry.with_hook(Curates)} and len(seen) >= 3
    assert set().union(*seen.values()) == {"trimem-curation", "trimem-curation-2"}


class Sleeper:
    """A curating step that takes ``seconds`` and logs (session, name, thread) as it starts;
    ``then(session_id)`` runs after the sleep (the long step waits there, the short ones
    report that they ended)."""

    def __init__(self, name: str, seconds: float, log: list, then=None):
        self.name, self.seconds, self.log, self.then = name, seconds, log, then

    def curate(self, env, session_id):
        import threading
        import time

        self.log.append((session_id, self.name, threading.current_thread().name))
        time.sleep(self.seconds)
        if self.then is not None:
            self.then(session_id)


def test_the_longest_step_starts_first_and_the_short_ones_share_the_other_thread(tmp_path, monkeypatch):
    """The worker orders a session's strategies by their mean time in this process: untimed,
    registry order (a, b, c); once timed, the long one (c) first, and the two short ones (either first) run
    after each other on the other thread while it runs. When s2 is curated, c waits until
    both short ones have ended, so a schedule that put a short one after c on its thread (the
    old fixed split: a alone, then b and c) would time out."""
    import threading

    from trimem.tools.remember import Message, remember
    from trimem.tools.runtime import Runtime

    log: list = []
    ended: dict[str, list[str]] = {"s1": [], "s2": []}
    shorts_done = threading.Event()

    def short_ended(sid: str) -> None:
        ended[sid].append(sid)
        if sid == "s2" and len(ended[sid]) == 2:
            shorts_done.set()

    def long_waits(sid: str) -> None:
        if sid == "s2":
            assert shorts_done.wait(10), "the short steps did not run beside the long one"

    fakes = [Sleeper("a", 0.05, log, short_ended), Sleeper("b", 0.05, log, short_ended),
             Sleeper("c", 0.3, log, long_waits)]
    rt = Runtime(Settings(home=str(tmp_path), curation=False).to_config())
    try:
        rt.curation.threads = 2
        for sid in ("s1", "s2"):
            remember(rt, [Message(content=f"a note of {sid}", speaker="user")], session_id=sid)
        monkeypatch.setattr(registry, "with_hook", lambda hook: list(fakes))
        queues: list[list[str]] = []
        order = rt.curation.times.longest_first

        def spy(strats):
            queues.append([s.name for s in order(strats)])
            return order(strats)
        monkeypatch.setattr(rt.curation.times, "longest_first", spy)
        for sid in ("s1", "s2"):
            rt.curation.curate_now("default", sid)
        assert not rt.curation.failures
    finally:
        rt.close(timeout=30)
    assert queues[0] == ["a", "b", "c"] and len(queues) == 2
    assert queues[1][0] == "c" and sorted(queues[1][1:]) == ["a", "b"]   # a, b: either first
    thread = {n: t for s, n, t in log if s == "s2"}
    assert thread["a"] == thread["b"] != thread["c"]
    assert "trimem-curation-2" in (thread["a"], thread["c"])   # the caller's thread and the helper


def test_step_times_put_untimed_steps_first_then_the_longest():
    from trimem.tools.curation_state import StepTimes

    times = StepTimes()
    a, b, c, d = (Sleeper(n, 0, []) for n in "abcd")
    assert times.longest_first([a, b, c, d]) == [a, b, c, d]
    times.note("a", 0.1)
    times.note("b", 1.0)
    times.note("c", 0.5)
    assert times.longest_first([a, b, c, d]) == [d, b, c, a]
    times.note("b", 0.0)        # one quick session moves the mean a fifth of the way
    assert times.longest_first([a, b, c, d]) == [d, b, c, a]
    for _ in range(10):
        times.note("b", 0.0)
    assert times.longest_first([a, b, c, d]) == [d, c, a, b]
    assert times.means() == {"a": 0.1, "b": round(0.8 ** 11, 3), "c": 0.5}


class Broken(PlainStrategy):
    """A curating plug-in whose every run fails (a store gone read-only, say)."""

    name = "broken"

    def curate(self, env, session_id):
        raise OSError(f"disk full while curating {session_id}")


async def test_a_busy_namespace_does_not_hide_another_namespaces_failures(monkeypatch, client, server):
    """Failures are kept per namespace (the last FAILURES_KEPT each; 3 here, to keep the test
    short), and the status resource reads its own namespace's: more later failures elsewhere
    than are kept leave the quiet namespace's one in view."""
    import json

    from trimem.tools.curation_state import Failures

    monkeypatch.setitem(registry._BUILTIN, "broken", f"{__name__}:Broken")
    monkeypatch.setattr(registry, "_loaded", {"broken": Broken()})
    rt = server.runtime
    rt.curation.failures = Failures(keep=3)

    async def status(ns: str) -> dict:
        return json.loads(resource_text(await client.read_resource(f"trimem://{ns}/status")))["curation"]

    payload(await client.call_tool("remember", {"messages": turns("q"), "session_id": "q1",
                                                "namespace": "quiet"}))
    assert rt.curation.wait_idle(30)
    for i in range(5):
        payload(await client.call_tool("remember", {"messages": turns(f"b{i}"), "session_id": f"b{i}",
                                                    "namespace": "busy"}))
    assert rt.curation.wait_idle(60)
    quiet = await status("quiet")
    assert quiet["failed_sessions"] == ["q1"]
    assert [f["session_id"] for f in quiet["recent_failures_in_this_process"]] == ["q1"]
    assert "disk full while curating q1" in quiet["recent_failures_in_this_process"][0]["error"]
    busy = (await status("busy"))["recent_failures_in_this_process"]
    assert [f["session_id"] for f in busy] == ["b2", "b3", "b4"]   # the last 3
    assert len(rt.curation.failures) == 4                           # bounded
