"""One strategy's curation step, session by session, on a stored namespace.

    python -m trimem.bench.curate_step --home DIR [--namespace scale] [--strategy wiki] [--sessions 100]

Opens the memory folder with background curation off, then for each of ``--sessions`` new
synthetic sessions (``bench/synth.py``, a seed of their own) remembers it and curates it with
``--strategy`` alone, as the curation worker would (inside ``snapshot.bulk``), timing that
step's wall and CPU time. The process is one long-lived curator, as a server is: what it keeps
between sessions (the wiki's trajectory index and its small pages' sums) counts. Run it on a
copy of a settled store (``bench/scale.py --keep``), one copy per run: it writes to the store.
Where `bench/scale.py` times every strategy at once on two threads, this isolates one.
"""

from __future__ import annotations

import argparse
import statistics
import time


def run(args) -> dict:
    """Remember and curate ``args.sessions`` sessions; each step's wall and CPU seconds."""
    from ..server.app import build_server
    from ..server.settings import Settings
    from ..storage.snapshot import bulk
    from ..strategies import registry
    from ..strategies.base import Curates
    from ..tools.remember import Message, remember
    from .synth import Synth

    strat = registry.get(args.strategy)
    if not isinstance(strat, Curates):
        raise SystemExit(f"{args.strategy} does not curate")
    rt = build_server(Settings(home=args.home, curation=False)).runtime
    made = Synth(seed=args.seed).sessions()
    out: dict = {"strategy": args.strategy, "sessions": [], "wall_s": [], "cpu_s": []}
    try:
        env = rt.env(args.namespace)
        for _ in range(args.sessions):
            sid, when, msgs = next(made)
            sid = f"step-{sid}"
            remember(rt, [Message(content=m["content"], speaker=m["speaker"], ref=f"{sid}-{k}")
                          for k, m in enumerate(msgs)],
                     session_id=sid, session_time=when, namespace=args.namespace)
            t0, c0 = time.monotonic(), time.process_time()
            with bulk():
                strat.curate(env, sid)
            out["sessions"].append(sid)
            out["wall_s"].append(time.monotonic() - t0)
            out["cpu_s"].append(time.process_time() - c0)
    finally:
        rt.close()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--home", required=True, help="a copy of a stored memory folder")
    ap.add_argument("--namespace", default="scale")
    ap.add_argument("--strategy", default="wiki")
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--seed", type=int, default=77)
    out = run(ap.parse_args(argv))
    wall, cpu = out["wall_s"], out["cpu_s"]
    half = wall[len(wall) // 2:]
    print(f"{out['strategy']}: {len(wall)} sessions, wall mean {statistics.mean(wall):.3f} s "
          f"(median {statistics.median(wall):.3f}, last half {statistics.mean(half):.3f}), "
          f"CPU mean {statistics.mean(cpu):.3f} s")


if __name__ == "__main__":
    main()
