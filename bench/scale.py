"""Scale: remember throughput, recall latency against its floor, RSS, and MCP cold start.

    python -m trimem.bench.scale --sizes 10000,100000 [--home DIR] [--json OUT] [--live N]

One namespace grows to each size through ``tools.remember.remember`` (one call per ~20-turn
synthetic session, see ``bench/synth.py``). At each size: wait for the automatic vector index (or
build it), then time ``tools.recall.recall`` (--strategy, default "plain", budget 2000) over distinct
questions about the stored content after a warm-up; separately time the floor (one query embedding, one BM25
top-100, one vector top-100); record RSS. Last, spawn ``trimem serve`` over stdio as mcp.json says
and time spawn -> first tools/list answer (populated and empty store) and spawn -> first recall.
Embedding time is measured by wrapping ``Runtime.embed`` (the real call, timed); nothing is mocked.
If strategies curate sessions in the background (``rt.curation``), each size waits for that queue
to drain and reports the wait; recall is timed only once curation is idle. A ``remember`` call
that takes longer than ``STALL_S`` has every thread's stack written to stderr (what it waits on).
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .synth import Timed, fragments, log, pct, rss_mb

NS = "scale"
ROOT = Path(__file__).resolve().parent.parent


STALL_S = 20           # a remember call this slow has every thread's stack written to stderr
NO_CURATION = [False]   # set by --no-curation
STRATEGY = ["plain"]    # set by --strategy

def ingest(rt, space, stream, carry: list, target: int, embed: Timed) -> dict:
    """Grow the namespace to ``target`` rows, one remember call per session."""
    from ..tools.remember import Message, remember

    have = space.sources.count()
    n0, e0, b0, t0 = have, sum(embed.times), sum(embed.bg), time.perf_counter()
    marks, last_t, last_n, calls = [], t0, have, []
    step = max(1, (target - have) // 10)
    while have < target:
        sid, when, msgs = carry.pop() if carry else next(stream)
        take = msgs[:target - have]
        if len(take) < len(msgs):  # the rest opens the next size (appending to the session)
            carry.append((sid, when, msgs[len(take):]))
        t1 = time.perf_counter()
        faulthandler.dump_traceback_later(STALL_S, file=sys.stderr)   # what a stall waits on
        remember(rt, [Message(**m) for m in take], session_id=sid, session_time=when, namespace=NS)
        faulthandler.cancel_dump_traceback_later()
        calls.append(time.perf_counter() - t1)
        have += len(take)
        if have - last_n >= step or have >= target:
            now = time.perf_counter()
            marks.append(round((have - last_n) / (now - last_t), 1))
            log(f"  {have}/{target} rows, {marks[-1]} msg/s (last chunk)")
            last_t, last_n = now, have
    wall = time.perf_counter() - t0
    emb = sum(embed.times) - e0
    cur = getattr(rt, "curation", None)  # background curation by strategies, if the project has it
    t1 = time.perf_counter()
    if cur is not None:
        cur.wait_idle()
    drain = time.perf_counter() - t1
    return {"rows_added": have - n0, "wall_s": round(wall, 1),
            "msgs_per_s": round((have - n0) / wall, 1), "embed_s": round(emb, 1),
            "embed_share": round(emb / wall, 3), "msgs_per_s_by_tenth": marks,
            "remember_calls": len(calls), "remember_p50_ms": pct(calls, 50),
            "remember_p99_ms": pct(calls, 99), "remember_max_ms": pct(calls, 100),
            "curation_drain_s": round(drain, 1), "curation_embed_s": round(sum(embed.bg) - b0, 1),
            "curation_failures": len(cur.failures) if cur is not None else None,
            "curation_step_s": cur.times.means() if cur is not None else None,
            "msgs_per_s_incl_curation": round((have - n0) / (wall + drain), 1)}


def skip(stream, carry: list, target: int, have: int) -> int:
    """Advance the synthetic stream from ``have`` to ``target`` rows exactly as ``ingest`` would,
    without storing (--reuse: the questions are drawn from the facts generated so far)."""
    while have < target:
        sid, when, msgs = carry.pop() if carry else next(stream)
        take = msgs[:target - have]
        if len(take) < len(msgs):
            carry.append((sid, when, msgs[len(take):]))
        have += len(take)
    return target


def stored_before(out: dict) -> int:
    return max((int(k) for k in out["sizes"]), default=0)


def wait_for_index(space, builds: Timed, n_before: int) -> dict:
    t0 = time.perf_counter()
    # compaction and index builds run in the background; the idle compaction of the last
    # writes is flushed too, so recall is timed on a settled store, not beside a compaction
    if not space.upkeep.wait(timeout=1800, flush=True):
        raise SystemExit("background upkeep did not finish within 30 minutes")
    waited = time.perf_counter() - t0
    auto = [round(t, 2) for t in builds.bg[n_before:]]  # built in the background at this size
    tbl = space.sources.table()
    explicit = None
    if not space.upkeep.has_vector_index(tbl):
        n = len(builds.times)
        space.upkeep.build_vector_index("sources")
        explicit = round(builds.times[n], 2)
    stats = {}
    for ix in tbl.list_indices():
        st = tbl.index_stats(ix.name)
        stats[ix.name] = {"type": str(st.index_type), "indexed": st.num_indexed_rows,
                          "unindexed": st.num_unindexed_rows}
    return {"auto_build_s": auto, "waited_s": round(waited, 2),
            "explicit_build_s": explicit, "indices": stats}


def measure_recall(rt, space, questions: list[str], warmup: int) -> dict:
    from ..tools.recall import recall

    for q in questions[:warmup]:
        recall(rt, q, STRATEGY[0], NS, 2000)
    fetch, logr = Timed(space.sources.get), Timed(space.log.add_recall)
    space.sources.get, space.log.add_recall = fetch, logr
    lat, empty, n_src = [], 0, []
    try:
        for q in questions[warmup:]:
            t0 = time.perf_counter()
            out = recall(rt, q, STRATEGY[0], NS, 2000)
            lat.append(time.perf_counter() - t0)
            empty += out.abstain
            n_src.append(len(out.sources))
    finally:
        del space.sources.get, space.log.add_recall
    emb, fts, vec = [], [], []
    for q in questions[warmup:]:
        t0 = time.perf_counter()
        qv = rt.embed_query(q)
        t1 = time.perf_counter()
        space.sources.fts_search(q, 100)
        t2 = time.perf_counter()
        space.sources.vector_search(qv, 100)
        t3 = time.perf_counter()
        emb.append(t1 - t0)
        fts.append(t2 - t1)
        vec.append(t3 - t2)
    floor = {"embed_p50": pct(emb, 50), "fts_p50": pct(fts, 50), "vector_p50": pct(vec, 50)}
    floor["sum_p50"] = round(sum(floor.values()), 2)
    return {"queries": len(lat), "warmup": warmup, "p50": pct(lat, 50), "p95": pct(lat, 95),
            "p99": pct(lat, 99), "max": pct(lat, 100), "abstained": int(empty),
            "mean_sources": round(statistics.mean(n_src), 1), "floor": floor,
            "inside_recall": {"get_sources_p50": pct(fetch.times, 50),
                              "log_recall_p50": pct(logr.times, 50)}}


def recall_during_rebuild(rt, space, questions: list[str]) -> dict:
    """Recall latency while the vector index is rebuilt from scratch (what happens in the
    background each time the table doubles): the build must not stall the server."""
    import threading

    from ..tools.recall import recall

    done = threading.Event()
    t0 = time.perf_counter()

    def build():
        try:
            space.upkeep.build_vector_index("sources", True)
        finally:
            done.set()

    threading.Thread(target=build, daemon=True).start()
    lat, i = [], 0
    while not done.is_set():
        q = questions[i % len(questions)]
        i += 1
        t1 = time.perf_counter()
        recall(rt, q, STRATEGY[0], NS, 2000)
        lat.append(time.perf_counter() - t1)
    return {"build_s": round(time.perf_counter() - t0, 1), "recalls": len(lat),
            "p50": pct(lat, 50), "p95": pct(lat, 95), "max": pct(lat, 100)}


def server_params(home: str):
    from mcp import StdioServerParameters

    cfg = json.loads((ROOT / "mcp.json").read_text())
    _, entry = next(iter(cfg["mcpServers"].items()))
    env = dict(os.environ)
    env.update(entry.get("env") or {})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["TRIMEM_HOME"] = home
    return StdioServerParameters(command=entry["command"], args=list(entry.get("args", [])), env=env)


async def spawn_once(home: str, query: str | None) -> tuple[float, float | None]:
    """Seconds from spawn to the first tools/list answer, and (if ``query``) to the first recall."""
    from mcp import Client

    t0 = time.perf_counter()
    async with Client(server_params(home), read_timeout_seconds=600) as c:
        tools = await c.list_tools()
        t_list = time.perf_counter() - t0
        assert "recall" in {t.name for t in tools.tools}
        t_recall = None
        if query:
            res = await c.call_tool("recall", {"query": query, "strategy": "plain",
                                               "namespace": NS, "budget_tokens": 2000})
            t_recall = time.perf_counter() - t0
            if getattr(res, "is_error", False):
                raise RuntimeError(f"recall over MCP failed: {res.content}")
    return t_list, t_recall


def cold_start(home: str, runs: int, query: str) -> dict:
    empty = tempfile.mkdtemp(prefix="trimem-scale-empty-")
    try:
        out = {}
        for label, h, q in (("empty", empty, None), ("populated", home, None),
                            ("populated_first_recall", home, query)):
            try:
                times = [asyncio.run(spawn_once(h, q)) for _ in range(runs)]
            except Exception as exc:  # report it; never lose the measurements taken so far
                out[label] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
                log(f"cold start {label}: FAILED {out[label]['error']}")
                continue
            vals = [t[0] for t in times] if not q else [t[1] for t in times if t[1] is not None]
            out[label] = {"median_s": round(statistics.median(vals), 3),
                          "runs_s": [round(v, 3) for v in vals]}
            log(f"cold start {label}: median {out[label]['median_s']} s")
        return out
    finally:
        shutil.rmtree(empty, ignore_errors=True)


class RamSampler:
    """Every ``every_s`` seconds: the process's RSS, what the RAM budget's copies hold and
    LanceDB's caches (``storage/budget.py``), logged; the largest of each kept per phase."""

    def __init__(self, budget, every_s: float):
        import threading

        self.budget, self.every_s, self.phase = budget, every_s, "start"
        self.peaks: dict[str, dict[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="ram-sampler")
        self._thread.start()

    def sample(self) -> dict[str, float]:
        from ..storage.allocators import heap

        got = {"rss_mb": rss_mb()[1], "copies_mb": round(self.budget.copies.used / 2**20, 1),
               "lance_mb": round(self.budget.lance_bytes() / 2**20, 1)}
        got.update((f"malloc_{k}_mb", x) for k, x in (heap() or {}).items())
        peak = self.peaks.setdefault(self.phase, {})
        for k, x in got.items():
            peak[k] = max(peak.get(k, 0.0), x)
        return got

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            got = self.sample()
            log(f"  ram ({self.phase}): rss {got['rss_mb']} MB, copies {got['copies_mb']} MB, "
                f"lance caches {got['lance_mb']} MB"
                + (f", malloc in use {got['malloc_in_use_mb']} / free {got['malloc_free_mb']} / "
                   f"mapped {got['malloc_mapped_mb']} MB" if "malloc_free_mb" in got else ""))

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return self.peaks


def run(args) -> dict:
    from ..server.settings import Settings
    from ..tools.runtime import Runtime
    from .synth import Synth

    home = args.home or tempfile.mkdtemp(prefix="trimem-scale-")
    t_start = time.perf_counter()
    out = {"date": time.strftime("%Y-%m-%d %H:%M"), "home": home, "cpus": os.cpu_count(),
           "strategy": STRATEGY[0],
           "loadavg_start": os.getloadavg(), "sizes": {}}
    rt = Runtime(Settings(home=home, curation=not NO_CURATION[0]).to_config())
    embed = Timed(rt.embed)
    rt.embed = embed
    t0 = time.perf_counter()
    space = rt.space(NS)  # opens the store and loads the embedding model (dimension, binding)
    rt.embed(["warm-up"])
    out["model_load_s"] = round(time.perf_counter() - t0, 2)
    stored = space.sources.count()
    if stored and not args.reuse:
        raise SystemExit(f"namespace {NS!r} in {home} is not empty: use a new --home (or --reuse)")
    sampler = RamSampler(space.store.budget, args.sample) if args.sample else None
    builds = Timed(space.upkeep.build_vector_index)
    space.upkeep.build_vector_index = builds
    synth, carry = Synth(seed=args.seed), []
    stream = synth.sessions()
    for size in sorted(int(s) for s in args.sizes.split(",")):
        log(f"size {size}: ingesting")
        if sampler is not None:
            sampler.phase = f"{size} ingest and drain"
        n_builds = len(builds.bg)
        res: dict[str, Any]
        if stored >= size:   # --reuse: the same synthetic stream, already stored; only re-time
            res = {"ingest": {"reused": skip(stream, carry, size, stored_before(out))}}
            cur = getattr(rt, "curation", None)   # sessions an interrupted run left queued
            t1 = time.perf_counter()
            if cur is not None and not NO_CURATION[0]:
                cur.wait_idle()
            res["ingest"]["curation_drain_s"] = round(time.perf_counter() - t1, 1)
            t1 = time.perf_counter()   # an earlier process's last writes may be uncompacted and
            space.upkeep.optimize()           # unindexed (its idle compaction died with it): settle them
            res["ingest"]["optimize_s"] = round(time.perf_counter() - t1, 1)
        else:
            before = stored_before(out)
            if stored > before:   # --reuse: an interrupted fill stored part of this size
                skip(stream, carry, stored, before)
            res = {"ingest": ingest(rt, space, stream, carry, size, embed)}
            if stored > before:
                res["ingest"]["resumed_at"] = stored
        log(f"size {size}: waiting for the vector index")
        res["index"] = wait_for_index(space, builds, n_builds)
        log(f"size {size}: recall x{args.queries} (+{args.warmup} warm-up)")
        if sampler is not None:
            sampler.phase = f"{size} recall"
        qs = synth.pick_questions(args.queries + args.warmup, seed=size)
        res["recall"] = measure_recall(rt, space, qs, args.warmup)
        if args.live:
            from .live import measure_live

            log(f"size {size}: {args.live} x remember a session, then recall at once")
            res["live"] = measure_live(rt, space, NS, STRATEGY[0], qs[args.warmup:], args.live,
                                       args.seed)
            space.upkeep.wait(timeout=1800, flush=True)
        log(f"size {size}: recall while the vector index is rebuilt")
        res["during_rebuild"] = recall_during_rebuild(rt, space, qs)
        res["rss_peak_mb"], res["rss_now_mb"] = rss_mb()
        if sampler is not None:
            res["ram_peaks"] = {k: dict(v) for k, v in sampler.peaks.items()}
        res["tables"] = {k: {"rows": n, "fragments": fragments(space, k)}
                         for k, n in space.stats().items()}
        disk = space.disk_bytes()   # after upkeep: compacted, old versions cleaned up
        res["disk"] = None if disk is None else {
            "bytes": disk, "per_stored_turn": round(disk / max(1, space.sources.count()))}
        res["loadavg"] = os.getloadavg()
        out["sizes"][size] = res
        if args.json:  # partial results survive a later failure
            Path(args.json).write_text(json.dumps(out, indent=2, default=str))
        r = res["recall"]
        log(f"size {size}: recall p50 {r['p50']} p95 {r['p95']} ms, floor {r['floor']['sum_p50']} ms")
    if sampler is not None:
        out["ram_peaks"] = sampler.stop()
    if args.cold_runs:
        out["cold_start"] = cold_start(home, args.cold_runs, synth.pick_questions(1, seed=1)[0])
    out["loadavg_end"] = os.getloadavg()
    out["total_s"] = round(time.perf_counter() - t_start, 1)
    if not args.home and not args.keep:
        shutil.rmtree(home, ignore_errors=True)
    return out


def _index_cell(ix: dict) -> str:
    """How the vector index came to be at one size, for the ingest table."""
    if ix["explicit_build_s"] is not None:
        idx = f"explicit build {ix['explicit_build_s']} s"
    elif ix["auto_build_s"]:
        idx = f"auto, built in {'+'.join(map(str, ix['auto_build_s']))} s, waited {ix['waited_s']} s"
    else:
        idx = "built at an earlier size"
    vi = ix["indices"].get("vector_idx")
    return idx + (f" ({vi['unindexed']} rows unindexed)" if vi else "")


def table(out: dict) -> str:
    la = ", ".join(f"{x:.2f}" for x in out["loadavg_start"])
    ing = ["| size | remember msg/s | embed share | msg/s first→last tenth | remember call p50 / p99 "
           "/ max ms | curation drain s (msg/s incl.) | vector index | RSS peak / now MB |",
           "|---" * 8 + "|"]
    rec = ["| size | recall p50 / p95 / p99 ms | floor p50: embed + fts + vec = sum ms | "
           "p50 − floor ms | in recall p50: get_sources / log_recall ms | load avg (1 min) |",
           "|---" * 6 + "|"]
    for size, r in out["sizes"].items():
        ig, rc = r["ingest"], r["recall"]
        fl, ins = rc["floor"], rc["inside_recall"]
        idx = _index_cell(r["index"])
        if "reused" in ig:
            ing.append(f"| {int(size):,} | (stored by an earlier run, --reuse; queued curation "
                       f"drained in {ig.get('curation_drain_s', 0)} s) |" + " |" * 6)
        else:
            marks = ig["msgs_per_s_by_tenth"]
            ing.append(f"| {int(size):,} | {ig['msgs_per_s']} | {ig['embed_share']:.0%} | {marks[0]}→"
                       f"{marks[-1]} | {ig['remember_p50_ms']} / {ig['remember_p99_ms']} / "
                       f"{ig['remember_max_ms']} | {ig['curation_drain_s']} "
                       f"({ig['msgs_per_s_incl_curation']}) | {idx} | {r['rss_peak_mb']} / "
                       f"{r['rss_now_mb']} |")
        rec.append(f"| {int(size):,} | {rc['p50']} / {rc['p95']} / {rc['p99']} | {fl['embed_p50']} + "
                   f"{fl['fts_p50']} + {fl['vector_p50']} = {fl['sum_p50']} | "
                   f"{round(rc['p50'] - fl['sum_p50'], 2)} | {ins['get_sources_p50']} / "
                   f"{ins['log_recall_p50']} | {r['loadavg'][0]:.2f} |")
    live = ["| size | rounds | recall right after remember p50 / p95 / max ms | while curating | "
            "remember p50 ms | drain after s |", "|---" * 6 + "|"]
    for size, r in out["sizes"].items():
        lv = r.get("live")
        if lv:
            live.append(f"| {int(size):,} | {lv['rounds']} | {lv['p50']} / {lv['p95']} / "
                        f"{lv['max']} | {lv['while_curating']} | {lv['remember_p50_ms']} | "
                        f"{lv['drain_after_s']} |")
    reb = ["| size | index rebuild s | recalls meanwhile | recall p50 / p95 / max ms |",
           "|---" * 4 + "|"]
    for size, r in out["sizes"].items():
        d = r.get("during_rebuild")
        if d:
            reb.append(f"| {int(size):,} | {d['build_s']} | {d['recalls']} | {d['p50']} / "
                       f"{d['p95']} / {d['max']} |")
    disk = ["| size | namespace on disk | per stored turn |", "|---|---|---|"]
    for size, r in out["sizes"].items():
        d = r.get("disk")
        if d:
            disk.append(f"| {int(size):,} | {d['bytes'] / 2**20:,.0f} MiB | "
                        f"{d['per_stored_turn']:,} B |")
    lines = [f"{out['date']} · {out['cpus']} CPUs · load avg at start {la} · model load "
             f"{out['model_load_s']} s · total {out['total_s']} s · recall strategy "
             f"{out.get('strategy', 'plain')}", "", *ing, "", *rec, "", *reb]
    if len(disk) > 2:
        lines += ["", *disk]
    if len(live) > 2:
        lines += ["", *live]
    cs = out.get("cold_start")
    if cs:
        lines += ["", "| cold start: spawn `trimem serve` (stdio) → | median s | runs s |",
                  "|---|---|---|"]
        names = {"empty": "first tools/list, empty store",
                 "populated": "first tools/list, populated store",
                 "populated_first_recall": "first recall answer (loads the model), populated"}
        for k, v in cs.items():
            vals = v.get("error") or ", ".join(map(str, v["runs_s"]))
            lines.append(f"| {names[k]} | {v.get('median_s', 'failed')} | {vals} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated row counts")
    ap.add_argument("--home", default="", help="an empty store folder (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the temp store folder")
    ap.add_argument("--reuse", action="store_true",
                    help="--home already holds this benchmark's rows (same --seed): time the "
                         "sizes it holds, and resume a fill that was stopped part-way")
    ap.add_argument("--json", default="", help="also write the results here")
    ap.add_argument("--queries", type=int, default=200, help="distinct measured recall queries")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--cold-runs", type=int, default=5, help="0 skips the cold-start runs")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--live", type=int, default=0,
                    help="also N rounds of remember-then-recall-at-once (bench/live.py)")
    ap.add_argument("--no-curation", action="store_true",
                    help="sources only (TRIMEM_CURATION=false): measure plain without the "
                         "paper strategies' background curation")
    ap.add_argument("--strategy", default="plain", help="the strategy recall is timed with")
    ap.add_argument("--sample", type=float, default=0,
                    help="every S seconds log RSS, the RAM budget's copies and LanceDB's caches")
    args = ap.parse_args(argv)
    NO_CURATION[0] = args.no_curation
    STRATEGY[0] = args.strategy
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))
    print(table(out))


if __name__ == "__main__":
    main()
