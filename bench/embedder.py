"""Speed of the local embedder (all-MiniLM-L6-v2, int8 ONNX, on onnxruntime) on real turns.

    python -m trimem.bench.embedder --data ../shared/data/locomo [--conv conv-26.json] [--sweep]

Measures, on the turns of one LoCoMo conversation (419 turns of ~25 words in conv-26):

* **load time** in a fresh subprocess, so imports and the file cache are counted honestly:
  import, then check the packaged files' sha256 and open the model (``load``), then the first
  tiny embedding;
* **throughput** of ``embed(all_turns)`` (turns/s, and model tokens/s), best and median of
  ``--repeats`` runs after a warm-up;
* **single-query latency** of ``embed_query`` over the conversation's QA questions (p50, p90);
* with ``--sweep``: throughput for several ``batch_tokens`` settings.

The machine may be shared: compare the *best* figures (medians move with other load), and
"turns per CPU-second" (about half the uncontended 2-thread wall-clock rate).

The data is read where it lies (``--data``); nothing is copied into the repository. Results
go to the log (stderr) and, with ``--json PATH``, to a JSON file.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger("trimem.bench.embedder")


def read_conversation(path: Path) -> tuple[list[str], list[str]]:
    """(turn texts in order, QA questions) of one LoCoMo file.

    Accepts both the flat layout of ../shared/data/locomo (``session_N`` at the top level) and
    the original ``{"conversation": {...}, "qa": [...]}`` layout.
    """
    raw = json.loads(path.read_text(encoding="utf-8"))
    conv = raw.get("conversation", raw)
    turns, n = [], 1
    while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
        turns += [t["text"] for t in conv.get(f"session_{n}") or [] if t.get("text")]
        n += 1
    questions = [q["question"] for q in raw.get("qa", []) if q.get("question")]
    return turns, questions


def _load_child(out: str) -> None:
    """Runs in a fresh interpreter: time import + load (+ first tiny embed) of the embedder."""
    t0 = time.perf_counter()
    from ..providers.local import LocalEmbedder

    t_import = time.perf_counter() - t0
    emb = LocalEmbedder()
    t1 = time.perf_counter()
    emb.load()
    t_load = time.perf_counter() - t1
    t2 = time.perf_counter()
    emb.embed_query("warm up")
    t_first = time.perf_counter() - t2
    Path(out).write_text(json.dumps({
        "import_s": t_import, "load_s": t_load, "first_query_s": t_first,
    }))


def measure_load() -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    try:
        subprocess.run([sys.executable, "-m", "trimem.bench.embedder", "--_load-child", out],
                       check=True)
        return json.loads(Path(out).read_text())
    finally:
        Path(out).unlink(missing_ok=True)


def measure_throughput(emb, texts: list[str], repeats: int) -> dict:
    emb.embed(texts[:64])  # warm-up: ORT allocates and tunes on its first shapes
    times, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        emb.embed(texts)
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    n_tokens = sum(len(e.ids) for e in emb._tokenizer.encode_batch(texts))
    best, med = min(times), statistics.median(times)
    # CPU seconds (all threads) per run: a contention-proof view on a shared machine.
    return {"turns": len(texts), "tokens": n_tokens, "turns_per_s_best": len(texts) / best,
            "turns_per_s_median": len(texts) / med, "tokens_per_s_best": n_tokens / best,
            "turns_per_cpu_s": len(texts) / statistics.median(cpu)}


def measure_queries(emb, queries: list[str]) -> dict:
    for q in queries[:5]:
        emb.embed_query(q)
    lat = []
    for q in queries:
        t = time.perf_counter()
        emb.embed_query(q)
        lat.append((time.perf_counter() - t) * 1000)
    lat.sort()
    return {"queries": len(lat), "p50_ms": statistics.median(lat),
            "p90_ms": lat[int(0.9 * (len(lat) - 1))], "max_ms": lat[-1]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--data", type=Path, default=Path("../shared/data/locomo"),
                   help="folder with LoCoMo conv-*.json files (default: %(default)s)")
    p.add_argument("--conv", default="conv-26.json", help="which conversation file to use")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--sweep", action="store_true", help="try several batch_tokens settings")
    p.add_argument("--no-load", action="store_true", help="skip the subprocess load timing")
    p.add_argument("--json", type=Path, default=None, help="also write results here")
    p.add_argument("--_load-child", nargs=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args._load_child:
        _load_child(*args._load_child)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("trimem.providers").setLevel(logging.WARNING)

    from ..providers.local import LocalEmbedder

    path = args.data / args.conv
    if not path.is_file():
        log.error("no LoCoMo file at %s (pass --data)", path)
        return 2
    turns, questions = read_conversation(path)
    results: dict = {"data": str(path)}
    if not args.no_load:
        r = results["load"] = measure_load()
        log.info("load           import %.3f s + load %.3f s; first query %.3f s",
                 r["import_s"], r["load_s"], r["first_query_s"])

    emb = LocalEmbedder().load()
    results["model"], results["threads"] = emb.name, emb._threads
    tp = results["throughput"] = measure_throughput(emb, turns, args.repeats)
    log.info("throughput     %d turns (%.1f tokens avg): best %.0f turns/s, median %.0f "
             "turns/s, %.0f tokens/s; %.0f turns per CPU-second", tp["turns"],
             tp["tokens"] / tp["turns"], tp["turns_per_s_best"], tp["turns_per_s_median"],
             tp["tokens_per_s_best"], tp["turns_per_cpu_s"])
    q = results["query"] = measure_queries(emb, questions or turns[:200])
    log.info("query latency  %d queries: p50 %.2f ms, p90 %.2f ms, max %.2f ms",
             q["queries"], q["p50_ms"], q["p90_ms"], q["max_ms"])
    if args.sweep:
        results["sweep"] = {}
        for bt in (128, 256, 512, 1024, 2048, 4096):
            e = LocalEmbedder(batch_tokens=bt, batch_size=256).load()
            r = results["sweep"][bt] = measure_throughput(e, turns, args.repeats)
            log.info("batch_tokens=%-5d best %.0f turns/s, median %.0f turns/s", bt,
                     r["turns_per_s_best"], r["turns_per_s_median"])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
