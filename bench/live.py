"""Recall in the middle of a user's day, for ``bench/scale.py --live N``.

A host calls ``remember`` after each exchange and ``recall`` before answering. So on a busy
namespace most recalls arrive while the last session is still being curated in the background,
and while the tables it wrote are not compacted or re-indexed yet. The settled-store timing in
``scale.py`` does not see that. Each round here does the worst case:

1. remember one new synthetic session (~20 turns, dated after everything stored);
2. recall one of the benchmark's questions at once, without waiting for curation.

Reported per round: the recall's latency and whether curation was still running when it
started. At the end, the time to drain the curation queue. The new sessions stay in the store,
with their own session ids and refs (``live-<stamp>-<n>``), so a later ``--reuse`` run at the
same size still reads the same benchmark rows.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

from .synth import Synth, pct


def measure_live(rt, space, ns: str, strategy: str, questions: list[str], rounds: int,
                 seed: int) -> dict:
    from ..tools.recall import recall
    from ..tools.remember import Message, remember

    stream = Synth(seed=seed + 1000).sessions()
    stamp = time.strftime("%Y%m%d%H%M%S")
    when = space.sessions.latest_time() or datetime(2030, 1, 1, tzinfo=timezone.utc)
    lat, busy, rem = [], [], []
    for i in range(rounds):
        _, _, msgs = next(stream)
        sid = f"live-{stamp}-{i:03d}"
        when = when + timedelta(hours=6)
        t0 = time.perf_counter()
        remember(rt, [Message(content=m["content"], speaker=m["speaker"], ref=f"{sid}:{k}")
                      for k, m in enumerate(msgs)],
                 session_id=sid, session_time=when.isoformat(), namespace=ns)
        rem.append(time.perf_counter() - t0)
        busy.append(not rt.curation.wait_idle(timeout=0))
        t0 = time.perf_counter()
        recall(rt, questions[i % len(questions)], strategy, ns, 2000)
        lat.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    rt.curation.wait_idle()
    drain = time.perf_counter() - t0
    return {"rounds": rounds, "p50": pct(lat, 50), "p95": pct(lat, 95), "max": pct(lat, 100),
            "while_curating": sum(busy), "remember_p50_ms": pct(rem, 50),
            "drain_after_s": round(drain, 1)}
