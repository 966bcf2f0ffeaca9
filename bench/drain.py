"""Curation throughput on a stored namespace: sessions curated per minute while its queue drains.

    python -m trimem.bench.drain --home DIR [--namespace scale] [--seconds 240]

Opens the memory folder as ``trimem serve`` would (queued curation resumes at once), waits
``--seconds``, and counts the sessions whose curation went from queued to done. Run revisions one
after another on the same store (each run drains part of the queue, and sessions get dearer as
the derived tables grow): compare neighbours.
"""

from __future__ import annotations

import argparse
import collections
import time


def main(argv: list[str] | None = None) -> None:
    from ..server.settings import Settings
    from ..tools.runtime import Runtime

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--home", required=True, help="a memory folder with queued sessions")
    ap.add_argument("--namespace", default="scale")
    ap.add_argument("--seconds", type=float, default=240.0)
    args = ap.parse_args(argv)
    rt = Runtime(Settings(home=args.home, curation=True).to_config())
    try:
        space = rt.space(args.namespace)

        def counts():
            return collections.Counter(s.curation for s in space.sessions.all())

        c0, t0 = counts(), time.perf_counter()
        time.sleep(args.seconds)
        c1, dt = counts(), time.perf_counter() - t0
    finally:
        rt.close(timeout=120)
    done = c1["done"] - c0["done"]
    print(f"{done} sessions curated in {dt:.0f} s = {60 * done / dt:.1f} per minute; "
          f"queued {c0['queued']} -> {c1['queued']}")


if __name__ == "__main__":
    main()
