"""Forgets in several processes at once on one namespace: does every one finish, and is the
forgotten text gone from every table, every old version and every file on disk?

    python -m trimem.bench.forget_race --procs 3 --rounds 20

Each worker process remembers one session per round, each holding a unique planted string
(and a recall of it is logged), waits for its curation, then, at each round, all workers forget
their round's message at the same moment (a file barrier), and each recalls the planted string
right after its forget answered and in every later round (by topic: a query naming the planted
string would be logged, legitimately, as a new recall record). Reported: forget failures, recalls
that returned forgotten text, and the planted strings of forgotten messages found anywhere in
the raw bytes of any file under the memory folder at the end (every table, version, index, log,
lock and capture file; a positive control checks the planted strings of messages *not*
forgotten are found by the same search, so the search can see them). Forget times per round.
tests/reliability/test_forget_race.py runs the same code with fewer rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

NS = "race"


def planted(proc: int, rnd: int) -> str:
    return f"zq{proc}v{rnd}plantedmarker{proc * 7919 + rnd * 104729:08d}"


def kept(proc: int) -> str:
    return f"zk{proc}keptmarker{proc * 15485863:010d}"


def barrier(home: Path, name: str, me: int, n: int, timeout: float = 600.0) -> None:
    folder = home.parent / "barriers"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.{me}").touch()
    end = time.monotonic() + timeout
    while sum((folder / f"{name}.{p}").exists() for p in range(n)) < n:
        if time.monotonic() > end:
            raise TimeoutError(f"barrier {name}")
        time.sleep(0.005)


def worker(home: Path, me: int, n: int, rounds: int) -> dict:
    from ..server.settings import Settings
    from ..tools.forget import forget
    from ..tools.recall import recall
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime

    rt = Runtime(Settings(home=str(home)).to_config())
    remember(rt, [Message(content=f"The spare key is under the {kept(me)} flower pot.",
                          speaker="Ana", ref=f"p{me}keep")], session_id=f"p{me}-keep", namespace=NS)
    for r in range(rounds):
        remember(rt, [Message(content=f"My locker code at the gym is {planted(me, r)}.",
                              speaker="Noa", ref=f"p{me}r{r}"),
                      Message(content=f"We hiked to the lake on day {r}.", speaker="Eli",
                              ref=f"p{me}h{r}")],
                 session_id=f"p{me}-s{r}", namespace=NS)
    rt.curation.wait_idle(600)
    for r in range(rounds):   # each planted string is in the recall log too
        recall(rt, f"locker code {planted(me, r)}", strategy="plain", namespace=NS)
    out: dict = {"proc": me, "failures": [], "stale": [], "forget_s": []}
    for r in range(rounds):
        barrier(home, f"r{r}", me, n)
        t0 = time.monotonic()
        try:
            forget(rt, refs=[f"p{me}r{r}"], namespace=NS)
        except Exception as exc:  # noqa: BLE001 - counted, the run goes on
            out["failures"].append(f"round {r}: {type(exc).__name__}: {str(exc)[:300]}")
        out["forget_s"].append(round(time.monotonic() - t0, 3))
        for q in range(r + 1):   # nothing forgotten so far comes back, in any strategy
            for strategy in ("plain", "auto"):
                rec = recall(rt, "what is my locker code at the gym?", strategy=strategy,
                             namespace=NS)   # the query itself names nothing forgotten
                if planted(me, q) in rec.context or any(planted(me, q) in s.text
                                                        for s in rec.sources):
                    out["stale"].append(f"round {r}: {strategy} returned round {q}'s text")
    barrier(home, "done", me, n)
    rt.curation.wait_idle(600)
    rt.close(120)
    return out


def grep(home: Path, needles: list[str]) -> dict[str, list[str]]:
    """needle -> files under ``home`` whose raw bytes hold it."""
    hits: dict[str, list[str]] = {}
    raw = [n.encode() for n in needles]
    for root, _, files in os.walk(home):
        for f in files:
            path = os.path.join(root, f)
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            for n, b in zip(needles, raw):
                if b in data:
                    hits.setdefault(n, []).append(os.path.relpath(path, home))
    return hits


def run(home: Path, procs: int = 3, rounds: int = 20) -> dict:
    """Run ``procs`` workers; their reports and what the raw search found."""
    home.parent.mkdir(parents=True, exist_ok=True)
    children = [subprocess.Popen([sys.executable, "-m", "trimem.bench.forget_race", "--worker",
                                  str(home), str(p), str(procs), str(rounds)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for p in range(procs)]
    reports = []
    for child in children:
        out, err = child.communicate(timeout=3600)
        if child.returncode != 0:
            raise RuntimeError(f"worker failed ({child.returncode}): {err[-3000:]}")
        reports.append(json.loads(out.strip().splitlines()[-1]))
    gone = [planted(p, r) for p in range(procs) for r in range(rounds)]
    control = [kept(p) for p in range(procs)]
    hits = grep(home, gone + control)
    return {"reports": reports, "forgotten_found": {k: v for k, v in hits.items() if k in gone},
            "kept_found": sorted(k for k in hits if k in control), "kept_planted": len(control)}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--home", default="")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        home, me, n, rounds = args.worker
        print(json.dumps(worker(Path(home), int(me), int(n), int(rounds))))
        return
    import tempfile

    tmp = tempfile.mkdtemp(prefix="trimem-forget-race-")
    home = Path(args.home) if args.home else Path(tmp) / "home"
    t0 = time.monotonic()
    res = run(home, args.procs, args.rounds)
    times = sorted(t for r in res["reports"] for t in r["forget_s"])
    print(json.dumps({
        "procs": args.procs, "rounds": args.rounds, "forgets": len(times),
        "failures": sum(len(r["failures"]) for r in res["reports"]),
        "stale_recalls": sum(len(r["stale"]) for r in res["reports"]),
        "forgotten_strings_on_disk": len(res["forgotten_found"]),
        "kept_strings_found_by_the_same_search": f"{len(res['kept_found'])}/{res['kept_planted']}",
        "forget_s": {"median": times[len(times) // 2], "max": times[-1]},
        "wall_s": round(time.monotonic() - t0, 1),
        "details": {"failures": [f for r in res["reports"] for f in r["failures"]][:10],
                    "stale": [s for r in res["reports"] for s in r["stale"]][:10],
                    "found": dict(list(res["forgotten_found"].items())[:10])}}))


if __name__ == "__main__":
    main()
