"""Recall latency on a store as it is: no ingest, no curation drain, nothing written but the
recall log.

    python -m trimem.bench.recall_time --home DIR [--strategy auto] [--queries 30]
        [--source-copy-max-rows N] [--json OUT]

For a store ``bench/scale.py`` filled (namespace ``scale``, its synthetic questions, drawn as the
scale benchmark draws them from the first ``--stored`` turns of its stream): time
``tools.recall.recall`` after ``--warmup`` recalls, and, for ``auto``, each voter's own time
(``explain``'s trace). Background curation stays off (``TRIMEM_CURATION=false``), so a store
whose queue has not drained is timed in the state it is in: say so when reporting it. Run two
settings back to back (``--source-copy-max-rows 10000`` and the default) for a paired A/B on one
store state; ``bench/scale.py`` is the one that settles a store and reports the settled figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from .synth import log, pct, rss_mb


def run(args) -> dict:
    from ..server.settings import Settings
    from ..tools import recall as recall_tool
    from ..tools.runtime import Runtime
    from .scale import NS, skip
    from .synth import Synth

    kw = {} if args.source_copy_max_rows is None else {
        "source_copy_max_rows": args.source_copy_max_rows}
    rt = Runtime(Settings(home=args.home, curation=False, **kw).to_config())
    last: dict = {}
    inner = recall_tool._run

    def keep(*a):   # the strategy's own result, trace included (the tool returns a summary)
        out = last["out"] = inner(*a)
        return out

    recall_tool._run = keep
    try:
        stored = rt.space(NS).sources.count()
        synth = Synth(seed=args.seed)
        skip(synth.sessions(), [], min(stored, args.stored), 0)
        qs = synth.pick_questions(args.queries + args.warmup, seed=args.stored)
        t0 = time.perf_counter()
        for q in qs[:args.warmup]:
            recall_tool.recall(rt, q, args.strategy, NS, args.budget)
        warm_s = time.perf_counter() - t0
        lat, per = [], {}
        for q in qs[args.warmup:]:
            t0 = time.perf_counter()
            recall_tool.recall(rt, q, args.strategy, NS, args.budget)
            lat.append(time.perf_counter() - t0)   # seconds: pct reports ms
            for s, d in last["out"].trace.get("strategies", {}).items():
                per.setdefault(s, []).append(d["ms"] / 1000)
    finally:
        recall_tool._run = inner
        rt.close()
    out = {"date": time.strftime("%Y-%m-%d %H:%M"), "stored": stored, "strategy": args.strategy,
           "source_copy_max_rows": args.source_copy_max_rows, "warmup_s": round(warm_s, 1),
           "p50": pct(lat, 50), "p95": pct(lat, 95), "mean": round(1000 * statistics.mean(lat), 1),
           "voters_p50": {s: pct(v, 50) for s, v in per.items()}, "rss_peak_mb": rss_mb()[0]}
    log(json.dumps(out))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Recall latency on a store as it is (no ingest, no drain).")
    ap.add_argument("--home", required=True, help="a store bench/scale.py filled")
    ap.add_argument("--strategy", default="auto")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--stored", type=int, default=90_000,
                    help="questions come from the facts of the stream's first N turns")
    ap.add_argument("--seed", type=int, default=7, help="bench/scale.py's --seed")
    ap.add_argument("--source-copy-max-rows", type=int, default=None)
    ap.add_argument("--json", help="also write the result here")
    args = ap.parse_args(argv)
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
