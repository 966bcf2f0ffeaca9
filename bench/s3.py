"""remember / recall latency on an S3-compatible endpoint (moto's server on 127.0.0.1) against
local disk, through the same code as the tools.

    python -m trimem.bench.s3 --sessions 20 --queries 20
    python -m trimem.bench.s3 --procs 2 --exchanges 30 --queries 10   # two machines, s3_procs.py

Needs ``pip install "moto[server]"``. moto keeps objects in memory and answers on loopback, so
the S3 figures show the cost of the object-store protocol (many small GET / PUT / LIST per
commit and per search), not of a network: a real bucket adds its round-trip time to each request.
Also checks that the endpoint refuses an overwrite with ``If-None-Match: *`` (the conditional
put Lance commits with); the double makes such puts atomic, as S3's are (``moto_s3.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p))], 1)


def run_one(home: str, sessions: int, queries: int) -> dict:
    from ..server.settings import Settings
    from ..tools.recall import recall
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime
    from .synth import Synth

    rt = Runtime(Settings(home=home, curation=False).to_config())
    rt.embed(["warm up"])
    syn = Synth(seed=5)
    rem = []
    for _, (sid, when, msgs) in zip(range(sessions), syn.sessions()):
        t0 = time.perf_counter()
        remember(rt, [Message(**m) for m in msgs], sid, when, "bench")
        rem.append(1000 * (time.perf_counter() - t0))
    rt.space("bench").upkeep.wait(flush=True)
    rec = []
    for q in syn.pick_questions(queries, seed=1):
        t0 = time.perf_counter()
        recall(rt, q, "plain", "bench", 2000)
        rec.append(1000 * (time.perf_counter() - t0))
    rt.close()
    return {"remember_ms_p50": _pct(rem, 0.5), "remember_ms_p95": _pct(rem, 0.95),
            "recall_plain_ms_p50": _pct(rec, 0.5), "recall_plain_ms_p95": _pct(rec, 0.95),
            "turns_per_remember": round(statistics.mean([20] * len(rem)))}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--procs", type=int, default=1,
                    help="2 or more: that many worker processes on one bucket (bench/s3_procs.py)")
    ap.add_argument("--exchanges", type=int, default=30, help="with --procs: per worker")
    ap.add_argument("--curation", action="store_true",
                    help="with --procs: each worker curates what it stored, then recalls")
    ap.add_argument("--worker", help=argparse.SUPPRESS)   # s3_procs.py starts its workers so
    ap.add_argument("--names", help=argparse.SUPPRESS)
    ap.add_argument("--barriers", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        from .s3_procs import worker

        worker(args.worker, args.names.split(","), args.exchanges, args.queries,
               Path(args.barriers), Path(args.out), args.curation)
        return
    if args.procs > 1:
        from .s3_procs import run

        report = run(args.procs, args.exchanges, args.queries, args.curation)
        print(json.dumps(report, indent=2, default=str))
        sys.exit(0 if report["ok"] else 1)
    from .moto_s3 import MotoS3

    with MotoS3() as s3:
        s3.client().create_bucket(Bucket="bench")
        conditional = s3.probe_conditional("bench")
        os.environ.update(s3.env_for())
        out = {"date": time.strftime("%Y-%m-%d"), "if_none_match_overwrite": conditional,
               "disk": run_one(tempfile.mkdtemp(prefix="trimem-s3bench-"), args.sessions,
                               args.queries),
               "s3_moto": run_one("s3://bench/trimem", args.sessions, args.queries)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
