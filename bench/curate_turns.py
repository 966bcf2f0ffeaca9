"""Curation of one namespace by one process, or by two processes taking turns.

    python -m trimem.bench.curate_turns --home DIR [--namespace scale] [--sessions 10] [--processes 2]
    python -m trimem.bench.curate_turns --home DIR --processes 2 --workers

Stores ``--sessions`` new synthetic sessions (``bench/synth.py``, a seed of their own) in the
namespace, queued for curation, then starts ``--processes`` curating processes (1 or 2) on the
folder. Each first answers one recall (warm, as a server is), then curates its share of the
sessions with every strategy (``CurationWorker.curate_now``, in the namespace's curation turn,
``storage/curating.py``); with two, they alternate strictly: session k is curated by process
k mod 2, once session k - 1 is done. Each step's wall time (from taking the turn to the session
being done) is what a session costs when two servers (or a server and the capture drainer)
curate one namespace in turn: a process whose turn follows the other's reads what it changed.

``--workers``: no imposed order. Each process queues its share on its own curation worker (as a
server queues the sessions its host remembers) once both are warm, and the workers take the
turn as they get it; the steps are listed in the order they ran, with the process of each, and
when each process's first and last session was done. That shows whether one process keeps the
turn while the other's sessions wait.

Run it on a copy of a settled store (``bench/scale.py --keep``), one copy per run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CURATOR = """
import json, sys, time
from pathlib import Path
from trimem.bench.curate_turns import curate
curate(sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5] == "1")
"""
WAIT_S = 600.0   # the longest one process waits for the other's step


def store_sessions(home: str, namespace: str, n: int, seed: int) -> list[str]:
    """Remember ``n`` new sessions, left queued as a process that stopped leaves them."""
    from ..server.settings import Settings
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime
    from .synth import Synth

    rt = Runtime(Settings(home=home, curation=False).to_config())
    made, sids = Synth(seed=seed).sessions(), []
    try:
        for _ in range(n):
            sid, when, msgs = next(made)
            sid = f"turns-{sid}"
            remember(rt, [Message(content=m["content"], speaker=m["speaker"], ref=f"{sid}-{k}")
                          for k, m in enumerate(msgs)],
                     session_id=sid, session_time=when, namespace=namespace)
            sids.append(sid)
        sessions = rt.space(namespace).sessions
        for sid in sids:
            row = sessions.get(sid)
            assert row is not None
            sessions.set_curation(sid, "queued", row.n_messages)
    finally:
        rt.close(60)
    return sids


def log_step(run_dir: Path, k: int, sid: str, start: float) -> None:
    with open(run_dir / "steps.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"k": k, "sid": sid, "start": start, "end": time.time()}) + "\n")


def by_worker(rt, namespace: str, run_dir: Path, mine: list[list]) -> None:
    """Queue ``mine`` on this process's worker once every process is warm; log the steps it
    takes (a try that finds the turn taken does nothing and is not a step)."""
    k_of = {sid: k for k, sid in mine}
    real = rt.curation.curate_now

    def logged(ns: str, sid: str, *rest, **kw) -> bool:
        t0 = time.time()
        taken = real(ns, sid, *rest, **kw)
        if taken:
            log_step(run_dir, k_of[sid], sid, t0)
        return taken

    rt.curation.curate_now = logged
    (run_dir / f"ready-{os.getpid()}").touch()
    end = time.monotonic() + WAIT_S
    while len(list(run_dir.glob("ready-*"))) < 2:
        if time.monotonic() > end:
            raise SystemExit(f"the other process was not ready within {WAIT_S:g} s")
        time.sleep(0.005)
    for _, sid in mine:
        rt.curation.enqueue(namespace, sid)
    if not rt.curation.wait_idle(WAIT_S * len(mine)):
        raise SystemExit("curation did not drain")


def curate(home: str, namespace: str, run_dir: Path, mine: list[list], workers: bool) -> None:
    """One curating process: for each ``(k, session id)`` of ``mine``, wait until step k - 1
    is done (its marker file), curate, log the step, mark step k done; ``workers``: the
    worker's order instead (``by_worker``)."""
    from ..server.settings import Settings
    from ..tools.recall import recall
    from ..tools.runtime import Runtime

    rt = Runtime(Settings(home=home, curation=False).to_config())
    try:
        recall(rt, "what did they do last weekend", strategy="auto", namespace=namespace)
        if workers:
            by_worker(rt, namespace, run_dir, mine)
        for k, sid in [] if workers else mine:
            end = time.monotonic() + WAIT_S
            while k and not (run_dir / f"done-{k - 1}").exists():
                if time.monotonic() > end:
                    raise SystemExit(f"step {k - 1} did not end within {WAIT_S:g} s")
                time.sleep(0.005)
            t0 = time.time()
            rt.curation.curate_now(namespace, sid)
            log_step(run_dir, k, sid, t0)
            (run_dir / f"done-{k}").touch()
        if rt.curation.failures:
            raise SystemExit(f"curation failed: {list(rt.curation.failures)}")
    finally:
        rt.close(60)


def run(args) -> dict:
    """Store and curate the sessions; each step's wall seconds, in order."""
    sids = store_sessions(args.home, args.namespace, args.sessions, args.seed)
    with tempfile.TemporaryDirectory(prefix="trimem-turns-") as tmp:
        run_dir = Path(tmp)
        shares = [[[k, s] for k, s in enumerate(sids) if k % args.processes == p]
                  for p in range(args.processes)]
        procs = [subprocess.Popen([sys.executable, "-c", CURATOR, args.home, args.namespace,
                                   str(run_dir), json.dumps(share), "1" if args.workers else "0"])
                 for share in shares]
        codes = [p.wait() for p in procs]
        if any(codes):
            raise SystemExit(f"a curating process failed: exit codes {codes}")
        steps = sorted((json.loads(line) for line in
                        (run_dir / "steps.jsonl").read_text(encoding="utf-8").splitlines()),
                       key=lambda s: s["start" if args.workers else "k"])
    t0 = min(s["start"] for s in steps)
    whose = [s["k"] % args.processes for s in steps]
    return {"processes": args.processes, "sessions": [s["sid"] for s in steps],
            "wall_s": [s["end"] - s["start"] for s in steps],
            "spans": [(s["start"], s["end"]) for s in steps], "process": whose,
            "done_s": {p: [round(s["end"] - t0, 2) for s, w in zip(steps, whose) if w == p]
                       for p in range(args.processes)}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--home", required=True, help="a copy of a stored memory folder")
    ap.add_argument("--namespace", default="scale")
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--processes", type=int, choices=(1, 2), default=2)
    ap.add_argument("--seed", type=int, default=78)
    ap.add_argument("--workers", action="store_true",
                    help="each process's worker takes the turn as it gets it (no imposed order)")
    args = ap.parse_args(argv)
    if args.workers and args.processes != 2:
        ap.error("--workers needs --processes 2")
    out = run(args)
    wall = out["wall_s"]
    later = wall[2:] or wall
    print(f"{out['processes']} process(es): {len(wall)} sessions, step mean "
          f"{statistics.mean(wall):.2f} s (median {statistics.median(wall):.2f}; after the "
          f"first two {statistics.mean(later):.2f}): " + " ".join(f"{w:.2f}" for w in wall))
    if args.workers:
        print("order (process of each step): " + " ".join(map(str, out["process"])))
        for p, done in out["done_s"].items():
            print(f"process {p}: sessions done at " + ", ".join(f"{d:.1f}" for d in done)
                  + " s after the first step began")


if __name__ == "__main__":
    main()
