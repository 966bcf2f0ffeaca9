"""What an embedder costs inside trimem: ingest, the footprint of one exchange, query, recall, memory.

    TRIMEM_EMBEDDER=e5-small python -m trimem.bench.embedder_cost --data ../shared/data/locomo \\
        --conv conv-26 --json OUT

Everything goes through the tools' own code (``tools.remember.remember``, ``tools.recall.recall``)
in this process, on one LoCoMo conversation, each store new in a temp folder:

1. **ingest, curation off**: the conversation's sessions remembered as the LoCoMo bench does
   (``TRIMEM_CURATION=false``): raw storage and embedding only (turns/s);
2. **ingest, settled**: the same into a second store with curation on, the clock stopped when
   curation has drained (turns/s);
3. **one exchange**: on that settled store, ``--exchanges`` times: remember two new messages (a
   question and its answer, in a session of their own) and time the call; then wait, untimed, for
   curation to go idle, as a host's next exchange comes after its model has answered (p50 / p95);
4. **query embedding**: ``embed_query`` of each question after ten warm-ups (p50 / p95);
5. **auto recall** at 2,000 tokens of each question on the settled store after ten warm-ups
   (p50 / p95);
6. **RSS**: peak and current at the end (MB).

Run one embedder per process (the RSS is the process's), one after the other, and say the load.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from .synth import pct, rss_mb


def _runtime(home: str, curation: bool):
    from ..server.settings import Settings
    from ..tools.runtime import Runtime

    return Runtime(Settings(home=home, curation=curation).to_config())


def _questions(raw: dict) -> list[str]:
    return [q["question"] for q in raw["qa"] if q.get("category") in (1, 2, 3, 4)]


def run(args) -> dict:
    from ..tools.recall import recall
    from ..tools.remember import Message, remember
    from .locomo import ingest

    raw = json.loads((Path(args.data) / f"{args.conv}.json").read_text())
    questions = _questions(raw)
    base = tempfile.mkdtemp(prefix="trimem-embcost-")
    out: dict = {"conversation": args.conv, "load_before": os.getloadavg()}

    raw_rt = _runtime(f"{base}/raw", curation=False)
    out["embedder"] = raw_rt.embedder_choice.as_dict() | {"model": raw_rt.embedder.name}
    raw_rt.embed(["warm-up"])   # the model's load is not ingest
    t0 = time.perf_counter()
    n = ingest(raw_rt, "c", raw)
    out["ingest_raw_turns_per_s"] = round(n / (time.perf_counter() - t0), 1)
    raw_rt.close()

    rt = _runtime(f"{base}/settled", curation=True)
    rt.embed(["warm-up"])
    t0 = time.perf_counter()
    n = ingest(rt, "c", raw)
    rt.curation.wait_idle()
    out["ingest_settled_turns_per_s"] = round(n / (time.perf_counter() - t0), 1)
    out["turns"] = n

    rt.space("c").upkeep.wait(timeout=600, flush=True)
    lat = []
    for i in range(args.exchanges):
        q = questions[i % len(questions)]
        msgs = [Message(content=q, speaker="user", ref=f"x{i}:1"),
                Message(content=f"I think it was {q.split()[-1].strip('?')}, as far as I remember.",
                        speaker="assistant", ref=f"x{i}:2")]
        t0 = time.perf_counter()
        remember(rt, msgs, session_id=f"exchange-{i}", namespace="c")
        lat.append(time.perf_counter() - t0)
        rt.curation.wait_idle()
    out["remember_exchange_ms"] = {"p50": pct(lat, 50), "p95": pct(lat, 95), "n": len(lat)}

    for q in questions[:10]:
        rt.embed_query(q)
    lat = []
    for q in questions:
        t0 = time.perf_counter()
        rt.embed_query(q)
        lat.append(time.perf_counter() - t0)
    out["query_embed_ms"] = {"p50": pct(lat, 50), "p95": pct(lat, 95), "n": len(lat)}

    rt.space("c").upkeep.wait(timeout=600, flush=True)
    for q in questions[:10]:
        recall(rt, q, "auto", "c", 2000)
    lat = []
    for q in questions:
        t0 = time.perf_counter()
        recall(rt, q, "auto", "c", 2000)
        lat.append(time.perf_counter() - t0)
    out["auto_recall_ms"] = {"p50": pct(lat, 50), "p95": pct(lat, 95), "n": len(lat)}
    peak, cur = rss_mb()
    out["rss_mb"] = {"peak": peak, "current": cur}
    out["load_after"] = os.getloadavg()
    rt.close()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data/locomo")
    ap.add_argument("--conv", default="conv-26")
    ap.add_argument("--exchanges", type=int, default=40)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    out = run(args)
    text = json.dumps(out, indent=2)
    if args.json:
        Path(args.json).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
