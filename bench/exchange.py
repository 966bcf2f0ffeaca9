"""What an agent loop's write costs: one exchange remembered into a live session, and bulk ingest.

    python -m trimem.bench.exchange [--turns 1000] [--rounds 60] [--gap S] [--bulk 2000] [--json OUT]

A namespace is filled with ``--turns`` synthetic turns (``bench/synth.py``, ~20 per session,
curation off for the fill); then a runtime with the default settings (curation on) remembers
``--rounds`` exchanges (one user message, one assistant message, refs given) into one live
session, one call each, as a host does after every exchange (back to back, or ``--gap``
seconds apart: the time the host's model thinks): p50 / p95 / max of the call and the
process's CPU per call. One more call is profiled step by step (``cProfile``; the cumulative
time of the storage and tool steps it spends in), and its LanceDB commits are counted. Last,
``--bulk`` turns of new sessions are remembered as a long transcript is (whole sessions,
``max_messages`` per call at most): turns per second, the share of it spent embedding, the
process's CPU per turn meanwhile and how long curation ran after. Everything runs through
the real tool functions, store and packaged embedder; nothing is mocked.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import shutil
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from .synth import Synth, Timed, log, pct

ROOT = Path(__file__).resolve().parent.parent

NS = "exchange"
PROFILE_OUT: list[str] = []   # --profile FILE: the profiled call's pstats file
GAP_S = 0.0                   # --gap: seconds between two exchanges (the host's model thinking)
# a step is a function's name, or ``<module>.<name>`` where storage's repositories share a name
STEPS = ("embed", "passages.rows_of", "sessions.get", "sources.by_refs", "write_lock", "see_latest",
         "sources.count", "sources.session_refs", "sessions.put", "sources.add", "passages.add",
         "upkeep.after_write", "audit", "enqueue", "_held")


def runtime(home: str, curation: bool):
    from ..server.settings import Settings
    from ..tools.runtime import Runtime

    return Runtime(Settings(home=home, curation=curation).to_config())


def fill(home: str, turns: int, seed: int) -> None:
    from ..tools.remember import Message, remember

    rt = runtime(home, curation=False)
    stream, have = Synth(seed=seed).sessions(), 0
    while have < turns:
        sid, when, msgs = next(stream)
        msgs = msgs[:turns - have]
        remember(rt, [Message(**m) for m in msgs], session_id=sid, session_time=when, namespace=NS)
        have += len(msgs)
    rt.space(NS).upkeep.wait(timeout=600, flush=True)
    rt.close()


def exchange(i: int) -> list:
    from ..tools.remember import Message

    return [Message(content=f"Turn {i}: could you check why the nightly export of the billing "
                            f"table failed again and what changed in its job since step {i - 1}?",
                    speaker="user", ref=f"u{i}"),
            Message(content=f"Turn {i}: the export failed because the disk of the worker filled "
                            "up; I moved its scratch folder to the larger volume and re-ran it, "
                            "it finished in four minutes and the row counts match.",
                    speaker="assistant", ref=f"a{i}")]


def commits_of(fn) -> tuple[int, object]:
    """Run ``fn`` counting LanceDB writes (table add / merge_insert / delete / update)."""
    from lancedb.table import LanceTable

    count = [0]
    saved = {n: getattr(LanceTable, n) for n in ("add", "merge_insert", "delete", "update")}

    me = threading.get_ident()

    def wrap(f):
        def counted(*a, **kw):
            if threading.get_ident() == me:   # not background curation's or upkeep's writes
                count[0] += 1
            return f(*a, **kw)
        return counted

    for n, f in saved.items():
        setattr(LanceTable, n, wrap(f))
    try:
        out = fn()
    finally:
        for n, f in saved.items():
            setattr(LanceTable, n, f)
    return count[0], out


def profile_one(rt, sid: str, i: int) -> dict:
    from ..tools.remember import remember

    prof = cProfile.Profile()
    prof.enable()
    n, _ = commits_of(lambda: remember(rt, exchange(i), session_id=sid, namespace=NS))
    prof.disable()
    if PROFILE_OUT:
        prof.dump_stats(PROFILE_OUT[0])
    st = pstats.Stats(prof)
    out: dict[str, float | int] = {"commits": n}
    root = str(ROOT)
    for (path, _, name), row in st.stats.items():  # type: ignore[attr-defined]
        step = name if name in STEPS else f"{Path(path).stem}.{name}"
        if step in STEPS and path.startswith(root):
            out[step] = round(out.get(step, 0) + row[3] * 1000, 1)
    out["total"] = round(max(r[3] for r in st.stats.values()) * 1000, 1)  # type: ignore[attr-defined]
    return out


@contextmanager
def lock_waits(waits: list[float]):
    """Record how long this thread waits for the namespace's write lock (outermost holds)."""
    from ..storage.locks import LeaseLock

    orig, me = LeaseLock.hold, threading.get_ident()

    @contextmanager
    def hold(self, wait_s=None):
        t0, outer = time.perf_counter(), not self._thread_lock._is_owned()
        with orig(self, wait_s) as held:
            if threading.get_ident() == me and outer:
                waits.append(time.perf_counter() - t0)
            yield held

    LeaseLock.hold = hold
    try:
        yield
    finally:
        LeaseLock.hold = orig


def live(home: str, rounds: int) -> dict:
    from ..tools.remember import remember

    rt = runtime(home, curation=True)
    space = rt.space(NS)
    rt.embed(["warm-up"])
    sid = f"live-{time.strftime('%H%M%S')}"
    lat, waited, cpu = [], [], []
    with lock_waits(waits := []):
        for i in range(rounds + 3):
            t0, w0, c0 = time.perf_counter(), len(waits), time.process_time()
            remember(rt, exchange(i), session_id=sid, namespace=NS)
            if i >= 3:   # the first calls open tables and build the session's caches
                lat.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
                waited.append(sum(waits[w0:]))
            if GAP_S:
                time.sleep(GAP_S)
    prof = profile_one(rt, sid, rounds + 3)
    rt.curation.wait_idle()
    space.upkeep.wait(timeout=600, flush=True)
    rt.close()
    return {"rounds": rounds, "p50_ms": pct(lat, 50), "p95_ms": pct(lat, 95),
            "max_ms": pct(lat, 100), "cpu_p50_ms": pct(cpu, 50), "gap_s": GAP_S,
            "lock_wait_p50_ms": pct(waited, 50),
            "lock_wait_max_ms": pct(waited, 100), "profile_ms": prof}


def bulk(home: str, turns: int, seed: int) -> dict:
    from ..tools.remember import Message, remember

    rt = runtime(home, curation=True)
    embed = Timed(rt.embed)
    rt.embed = embed
    rt.space(NS)
    rt.embed(["warm-up"])
    stream, have, calls = Synth(seed=seed + 99).sessions(), 0, 0
    t0, c0 = time.perf_counter(), time.process_time()
    e0 = sum(embed.times)
    while have < turns:
        sid, when, msgs = next(stream)
        remember(rt, [Message(**m) for m in msgs], session_id=f"bulk-{sid}", session_time=when,
                 namespace=NS)
        have, calls = have + len(msgs), calls + 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    emb = sum(embed.times) - e0
    t1 = time.perf_counter()
    rt.curation.wait_idle()
    after = time.perf_counter() - t1
    rt.close()
    # the process's CPU seconds per turn while ingesting (every thread: curation that runs
    # meanwhile counts), less sensitive to a shared machine's load than turns per second
    return {"turns": have, "calls": calls, "turns_per_s": round(have / wall, 1),
            "embed_share": round(emb / wall, 3), "cpu_ms_per_turn": round(cpu / have * 1000, 2),
            "curation_after_s": round(after, 1)}


def _proc(cmd: list[str], env: dict, feed: bytes, until: bytes | None) -> tuple[float, float]:
    """Spawn ``cmd``, write ``feed``; (seconds until a stdout line holding ``until`` or the
    exit, CPU seconds the process used in all)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env)
    assert p.stdin is not None and p.stdout is not None
    p.stdin.write(feed)
    p.stdin.flush()
    if until is not None:
        for line in p.stdout:
            if until in line:
                break
    wall = time.perf_counter() - t0
    p.stdin.close()
    p.stdout.read()
    _, _, use = os.wait4(p.pid, 0)
    p.returncode = 0
    return (wall if until is not None else time.perf_counter() - t0), use.ru_utime + use.ru_stime


def cold(runs: int) -> dict:
    """``trimem serve`` (stdio) spawn -> first tools/list answer, and a lone ``trimem hook``
    (``Stop``) process: median wall and CPU seconds of ``runs`` each, on an empty home."""
    import statistics

    from .hookproc import hook_command

    home = tempfile.mkdtemp(prefix="trimem-cold-")
    env = dict(os.environ, TRIMEM_HOME=home, TRIMEM_CAPTURE_LINGER_S="0")
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    feed = "".join(json.dumps(m) + "\n" for m in msgs).encode()
    serve = [hook_command()[0], "serve"]
    stop = json.dumps({"hook_event_name": "Stop", "session_id": "cold", "cwd": home,
                       "transcript_path": os.path.join(home, "none.jsonl")}).encode()
    out = {}
    try:
        for label, cmd, data, until in (("serve_tools_list", serve, feed, b'"id":2'),
                                        ("hook_stop", hook_command(), stop, None)):
            got = [_proc(cmd, env, data, until) for _ in range(runs)]
            out[label] = {"median_s": round(statistics.median(g[0] for g in got), 3),
                          "cpu_median_s": round(statistics.median(g[1] for g in got), 3),
                          "runs_s": [round(g[0], 3) for g in got]}
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--bulk", type=int, default=0, help="turns of whole sessions to ingest after")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--home", help="reuse this folder (filled to --turns if empty)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--cold", type=int, default=0, help="only time N cold starts (serve, hook)")
    ap.add_argument("--profile", help="write the profiled call's pstats to this file")
    ap.add_argument("--gap", type=float, default=0.0,
                    help="seconds between two exchanges (default 0: back to back)")
    args = ap.parse_args(argv)
    global GAP_S
    GAP_S = args.gap
    if args.cold:
        print(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "loadavg": os.getloadavg(),
                          **cold(args.cold)}, indent=1))
        return
    if args.profile:
        PROFILE_OUT.append(args.profile)
    home = args.home or tempfile.mkdtemp(prefix="trimem-exchange-")
    out: dict = {"date": time.strftime("%Y-%m-%d %H:%M"), "turns": args.turns,
                 "loadavg_start": os.getloadavg()}
    try:
        t0 = time.perf_counter()
        if not Path(home, "_namespaces.lance").exists():
            fill(home, args.turns, args.seed)
        out["fill_s"] = round(time.perf_counter() - t0, 1)
        log(f"filled {args.turns} turns in {out['fill_s']} s; {args.rounds} exchanges")
        out["exchange"] = live(home, args.rounds)
        if args.bulk:
            out["bulk"] = bulk(home, args.bulk, args.seed)
        out["loadavg_end"] = os.getloadavg()
    finally:
        if not args.home:
            shutil.rmtree(home, ignore_errors=True)
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
