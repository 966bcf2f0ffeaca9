"""remember / recall latency on an S3-compatible endpoint (moto's server on 127.0.0.1) against
local disk, through the same code as the tools.

    python -m trimem.bench.s3 --sessions 20 --queries 20

Needs ``pip install "moto[server]"``. moto keeps objects in memory and answers on loopback, so
the S3 figures show the cost of the object-store protocol (many small GET / PUT / LIST per
commit and per search), not of a network: a real bucket adds its round-trip time to each request.
Also checks that the endpoint refuses an overwrite with ``If-None-Match: *`` (the conditional
put Lance commits with).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import tempfile
import time


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
    args = ap.parse_args(argv)
    import boto3
    from moto.server import ThreadedMotoServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    srv.start()
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    endpoint = f"http://127.0.0.1:{port}"
    os.environ.update(AWS_ENDPOINT=endpoint, AWS_ACCESS_KEY_ID="testing",
                      AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1", AWS_ALLOW_HTTP="true")
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="bench")
    s3.put_object(Bucket="bench", Key="probe", Body=b"1")
    try:
        s3.put_object(Bucket="bench", Key="probe", Body=b"2", IfNoneMatch="*")
        conditional = "overwrite allowed (conditional put NOT honoured)"
    except s3.exceptions.ClientError as exc:
        conditional = f"refused ({exc.response['Error']['Code']})"
    out = {"date": time.strftime("%Y-%m-%d"), "if_none_match_overwrite": conditional,
           "disk": run_one(tempfile.mkdtemp(prefix="trimem-s3bench-"), args.sessions, args.queries),
           "s3_moto": run_one("s3://bench/trimem", args.sessions, args.queries)}
    srv.stop()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
