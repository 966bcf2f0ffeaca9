"""One live session growing an exchange at a time, curated after each (an agent loop whose host
pauses between exchanges long enough for curation to run): each strategy's step per curation.

    python -m trimem.bench.live_session --home NEW_DIR [--exchanges 40] [--json OUT]

A host calls ``remember`` after each exchange, and the session is queued again each time, so its
curation runs again on the whole session: what a step costs as the session grows is what a long
coding or chat session pays between its exchanges. Messages come from the synthetic stream
(``bench/synth.py``), alternating ``user`` / ``assistant``; each curation is the worker's own
(``CurationWorker.curate_now``: every strategy, two at a time on two cores). Reported per
strategy: the total, and the mean step over the first and the last ten curations; the wall time
of the whole run; and a hash of the hybrid memories at the end (two builds that must store the
same memories can be compared by it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path

import numpy as np


def run(home: str, exchanges: int, seed: int = 21) -> dict:
    from ..server.settings import Settings
    from ..strategies.hybrid.store import KINDS
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime
    from .synth import Synth

    if Path(home).exists() and any(Path(home).iterdir()):
        raise SystemExit(f"{home} is not empty: give a new folder")
    made = Synth(seed=seed).sessions()
    texts: list[str] = []
    while len(texts) < 2 * exchanges:
        texts += [m["content"] for m in next(made)[2]]
    steps: dict[str, list[float]] = {}
    rt = Runtime(Settings(home=home, curation=False).to_config())
    worker_note = rt.curation.times.note

    def note(name: str, seconds: float) -> None:   # each strategy's step, as the worker times it
        steps.setdefault(name, []).append(seconds)
        worker_note(name, seconds)

    rt.curation.times.note = note
    try:
        t0 = time.perf_counter()
        for k in range(exchanges):
            remember(rt, [Message(content=texts[2 * k + i], speaker=("user", "assistant")[i],
                                  ref=f"x{k}.{i}") for i in (0, 1)],
                     session_id="live", namespace="default")
            rt.curation.curate_now("default", "live")
        wall = time.perf_counter() - t0
        digest = hashlib.sha256()
        rows = rt.space("default").memories.where({"session_id": "live", "kind": list(KINDS)},
                                                  vectors=True)
        for r in sorted(rows, key=lambda r: r.id):
            digest.update(repr((r.id, r.text, r.status)).encode())
            digest.update(np.asarray(r.vector, np.float32).tobytes())
    finally:
        rt.close(60)
    return {"exchanges": exchanges, "wall_s": round(wall, 1),
            "hybrid_memories": digest.hexdigest()[:16],
            "strategies": {name: {"total_s": round(sum(xs), 2),
                                  "first10_ms": round(1000 * statistics.mean(xs[:10])),
                                  "last10_ms": round(1000 * statistics.mean(xs[-10:]))}
                           for name, xs in sorted(steps.items())}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--home", required=True, help="a new folder")
    ap.add_argument("--exchanges", type=int, default=40)
    ap.add_argument("--json", help="write the result here too")
    args = ap.parse_args(argv)
    out = run(args.home, args.exchanges)
    for name, s in out["strategies"].items():
        print(f"{name}: {s['total_s']:.1f} s in all; a step {s['first10_ms']} ms over the first "
              f"ten curations, {s['last10_ms']} ms over the last ten")
    print(f"{out['exchanges']} exchanges in {out['wall_s']:.1f} s; hybrid memories "
          f"{out['hybrid_memories']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
