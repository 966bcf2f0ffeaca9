"""One memory on object storage used from two "machines": two worker processes, each with its
own process-local folders (HOME, XDG_*, TMPDIR), against one bucket of moto's S3 server (puts
atomic as S3's, ``moto_s3.py``).

    python -m trimem.bench.s3 --procs 2 --exchanges 30 --queries 10

Each worker remembers one exchange (a ``user`` then an ``assistant`` message) per call, three
calls per exchange: into its own namespace, into a session of its own in the namespace both
share, and into the one session of that namespace both append to. Both start at once (a file
barrier) and, once both have written, recall (plain and auto) from its own namespace and the
shared one; a recall from its own namespace quoting the other's messages counts as a leak.
Then ``s3_check.py`` reads every namespace from a fresh runtime. Reported: per worker remember
and recall p50 / p95 (ms), and what was lost, doubled, leaked or misnumbered; the exit status
is 1 if anything was.

``--curation``: each worker's server curates what it stored, as a server does (the shared
namespace's sessions by both, taking turns: ``storage/bucket_lease.py``), and waits for its
queue to drain before the recalls (the drain's seconds are reported). The check then also counts
sessions left uncurated and derived rows of a worker's own namespace quoting the other's
messages.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TEAM = "team"
SHARED_SESSION = "shared"
BUCKET = "bench"
HOME_URI = f"s3://{BUCKET}/trimem"
EXCHANGES_PER_SESSION = 5


def marker(name: str, where: str, k: int, role: str) -> str:
    """A word that occurs in one message only: which worker wrote it, where, which exchange."""
    return f"zz{name}x{where}x{k}{role[0]}"


def places(name: str, k: int) -> list[tuple[str, str, str]]:
    """(label, namespace, session) of the three calls exchange ``k`` of worker ``name`` makes."""
    part = k // EXCHANGES_PER_SESSION
    return [("own", f"own-{name}", f"{name}-own-{part}"),
            ("team", TEAM, f"{name}-team-{part}"),
            ("shared", TEAM, SHARED_SESSION)]


def ms_pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p))], 1) if xs else 0.0


def barrier(folder: Path, step: str, me: str, names: list[str], timeout: float = 900.0) -> None:
    (folder / f"{step}.{me}").touch()
    end = time.monotonic() + timeout
    while not all((folder / f"{step}.{n}").exists() for n in names):
        if time.monotonic() > end:
            raise TimeoutError(f"barrier {step}: the other worker never arrived")
        time.sleep(0.01)


def worker(name: str, names: list[str], exchanges: int, queries: int, barriers: Path,
           out: Path, curation: bool = False) -> None:
    from ..server.settings import Settings
    from ..tools.recall import recall
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime
    from .synth import Synth

    others = [n for n in names if n != name]
    rt = Runtime(Settings(home=HOME_URI, curation=curation).to_config())
    rt.embed(["warm up"])
    syn = Synth(seed=11 + names.index(name))
    turns = iter(m["content"] for _, _, msgs in syn.sessions() for m in msgs)
    acks, rem_ms = [], []
    barrier(barriers, "start", name, names)
    for k in range(exchanges):
        for where, ns, sid in places(name, k):
            msgs = [Message(content=f"{next(turns)} ({marker(name, where, k, role)})", speaker=role,
                            ref=f"{name}.{where}.{k}.{role[0]}") for role in ("user", "assistant")]
            t0 = time.perf_counter()
            res = remember(rt, msgs, sid, None, ns)
            rem_ms.append(1000 * (time.perf_counter() - t0))
            acks.append({"ns": ns, "sid": sid, "refs": [m.ref for m in msgs],
                         "ids": res.source_ids, "stored": res.stored})
    barrier(barriers, "written", name, names)
    t0 = time.perf_counter()
    drained = rt.curation.wait_idle(1800) if curation else True
    drain_s = round(time.perf_counter() - t0, 1)
    barrier(barriers, "curated", name, names)
    rec: dict[str, list[float]] = {"plain": [], "auto": []}
    leaks: list[str] = []
    for q in syn.pick_questions(queries, seed=3):
        for ns in (f"own-{name}", TEAM):
            for strategy in rec:
                t0 = time.perf_counter()
                got = recall(rt, q, strategy, ns, 2000)
                rec[strategy].append(1000 * (time.perf_counter() - t0))
                if ns == TEAM:
                    continue
                leaks += [f"{strategy}: ref {s.ref}" for s in got.sources
                          if not (s.ref or "").startswith(f"{name}.")]
                leaks += [f"{strategy}: text of {o}" for o in others if f"zz{o}x" in got.context]
    rt.close()
    report = {"name": name, "remember_calls": len(rem_ms),
              "remember_ms_p50": ms_pct(rem_ms, 0.5), "remember_ms_p95": ms_pct(rem_ms, 0.95),
              **{f"recall_{s}_ms_{p}": ms_pct(xs, q) for s, xs in rec.items()
                 for p, q in (("p50", 0.5), ("p95", 0.95))},
              "recalls": sum(len(xs) for xs in rec.values()), "recall_leaks": leaks, "acks": acks,
              "curation": curation, "curation_drain_s": drain_s if curation else None,
              "curation_drained": drained, "curation_failures": len(rt.curation.failures)}
    out.write_text(json.dumps(report))


def machine_env(base: dict[str, str], folder: Path, s3_env: dict[str, str]) -> dict[str, str]:
    """A worker's environment: the bucket's, and process-local folders of its own."""
    env = {k: v for k, v in base.items() if not k.startswith(("TRIMEM_", "XDG_", "AWS_"))}
    local = {"HOME": folder / "home", "XDG_CONFIG_HOME": folder / "config",
             "XDG_STATE_HOME": folder / "state", "XDG_CACHE_HOME": folder / "cache",
             "XDG_DATA_HOME": folder / "data", "TMPDIR": folder / "tmp"}
    for path in local.values():
        path.mkdir(parents=True, exist_ok=True)
    return env | {k: str(v) for k, v in local.items()} | s3_env | {
        "TRIMEM_HOME": HOME_URI, "LANCEDB_LOG": "error"}


def run(procs: int = 2, exchanges: int = 30, queries: int = 10, curation: bool = False) -> dict:
    """Start moto, the workers, wait, check: the report (``ok`` False if anything went wrong)."""
    from .moto_s3 import MotoS3
    from .s3_check import check

    names = [f"m{i + 1}" for i in range(procs)]
    with MotoS3() as s3, tempfile.TemporaryDirectory(prefix="trimem-s3procs-") as tmp:
        s3.client().create_bucket(Bucket=BUCKET)
        conditional = s3.probe_conditional(BUCKET)
        root = Path(tmp)
        (root / "barriers").mkdir()
        t0 = time.monotonic()
        workers = {}
        for n in names:
            cmd = [sys.executable, "-m", "trimem.bench.s3", "--worker", n, "--names", ",".join(names),
                   "--exchanges", str(exchanges), "--queries", str(queries),
                   "--barriers", str(root / "barriers"), "--out", str(root / f"{n}.json")]
            cmd += ["--curation"] if curation else []
            workers[n] = subprocess.Popen(cmd, env=machine_env(dict(os.environ), root / n,
                                                                 s3.env_for()),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          text=True)
        failed = {}
        for n, p in workers.items():
            _, err = p.communicate(timeout=1800)
            if p.returncode:
                failed[n] = err[-2000:]
        wall = round(time.monotonic() - t0, 1)
        reports = [json.loads((root / f"{n}.json").read_text()) for n in names if n not in failed]
        local = {n: sorted(str(p.relative_to(root / n)) for p in (root / n).rglob("*")
                           if p.is_file()) for n in names}
        os.environ.update(s3.env_for())          # the checker reads the bucket from here
        checked = check(HOME_URI, reports, names, curation) if not failed else {}
    acks = [a for r in reports for a in r.pop("acks")]
    problems = sum(v for k, v in checked.items() if isinstance(v, int) and k != "messages")
    leaks = sum(len(r["recall_leaks"]) + r["curation_failures"] + (not r["curation_drained"])
                for r in reports)
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "if_none_match_overwrite": conditional, "procs": procs, "exchanges": exchanges,
            "queries": queries, "curation": curation, "wall_s": wall, "remember_calls": len(acks),
            "workers": reports, "check": checked, "worker_failures": failed,
            "process_local_files": local,
            "ok": not failed and problems == 0 and leaks == 0}
