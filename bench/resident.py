"""Resident memory of a fresh process answering recalls on a store as it is: what each
strategy's recalls make resident, and what each in-process copy is charged.

    python -m trimem.bench.resident --home DIR [--strategies plain,hybrid,workspace,wiki,auto]
        [--recalls 30] [--stored 20000] [--json OUT]

For a store ``bench/scale.py`` filled (namespace ``scale``, its synthetic questions drawn from
the first ``--stored`` turns of its stream, as ``bench/recall_time.py`` draws them). Curation
stays off. For each strategy in turn, ``--recalls`` recalls at ``--budget`` tokens; after the
burst, the process's resident size (``VmRSS``), again once the server's idle trim has run
(``storage/allocators.py``: ``IDLE_TRIM_S`` after the last call), and the peak so far
(``VmHWM``). At the end, what the RAM budget charges each copy it holds (``storage/budget.py``):
the derived tables' copies by kind, the others (the sources' copy, the strategies' namespace
caches) by type. Run two builds back to back on one store for an A/B; the settled figure with
curation on is ``bench/scale.py``'s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from .synth import log, pct


def status_mb() -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` of this process in MB (Linux: ``/proc/self/status``)."""
    got = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "VmHWM"):
            got[key] = round(int(line.split()[1]) / 1024, 1)
    return got


def charges(rt, namespace: str) -> dict[str, float]:
    """What the RAM budget charges each copy it holds, in MB."""
    core = rt.space(namespace).derived.core
    kinds = {id(c): k for k, c in core.copies().items()}
    out: dict[str, float] = {}
    for n, (copy, nbytes) in enumerate(rt.store.budget.copies.charges()):
        name = kinds.get(id(copy)) or f"{type(copy).__name__} {n}"
        out[name] = round(nbytes / 2**20, 1)
    return out


def run(args) -> dict:
    from ..server.settings import Settings
    from ..storage.allocators import IDLE_TRIM_S
    from ..tools.recall import recall
    from ..tools.runtime import Runtime
    from .scale import NS, skip
    from .synth import Synth

    rt = Runtime(Settings(home=args.home, curation=False).to_config())
    bursts = {}
    try:
        stored = rt.space(NS).sources.count()
        synth = Synth(seed=args.seed)
        skip(synth.sessions(), [], min(stored, args.stored), 0)
        strategies = args.strategies.split(",")
        qs = synth.pick_questions(args.recalls * len(strategies), seed=args.stored)
        start = status_mb()
        for n, strategy in enumerate(strategies):
            lat = []
            for q in qs[n * args.recalls:(n + 1) * args.recalls]:
                t0 = time.perf_counter()
                recall(rt, q, strategy, NS, args.budget)
                lat.append(time.perf_counter() - t0)   # seconds: pct reports ms
            after = status_mb()
            time.sleep(IDLE_TRIM_S + 0.5)
            idle = status_mb()
            bursts[strategy] = {"p50": pct(lat, 50), "mean": round(1000 * statistics.mean(lat), 1),
                                "rss_mb": after["VmRSS"], "rss_idle_mb": idle["VmRSS"],
                                "hwm_mb": idle["VmHWM"]}
            log(f"{strategy}: {json.dumps(bursts[strategy])}")
        held = charges(rt, NS)
    finally:
        rt.close()
    out = {"date": time.strftime("%Y-%m-%d %H:%M"), "stored": stored, "recalls": args.recalls,
           "start_mb": start, "strategies": bursts, "copies_mb": held,
           "copies_total_mb": round(sum(held.values()), 1)}
    log(json.dumps({k: out[k] for k in ("copies_mb", "copies_total_mb")}))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Resident memory of recalls on a store as it is.")
    ap.add_argument("--home", required=True, help="a store bench/scale.py filled")
    ap.add_argument("--strategies", default="plain,hybrid,workspace,wiki,auto")
    ap.add_argument("--recalls", type=int, default=30, help="recalls of each strategy")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--stored", type=int, default=20_000,
                    help="questions come from the facts of the stream's first N turns")
    ap.add_argument("--seed", type=int, default=7, help="bench/scale.py's --seed")
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args(argv)
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
