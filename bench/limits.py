"""One `remember` at the input limits: peak RSS and time, and recall latency meanwhile.

Starts `trimem serve --http` on a fresh TRIMEM_HOME, warms it (model loaded), then client A
sends one remember of N messages x C characters while client B sends a plain recall every
0.5 s, through the remember and through the background curation that follows (until the
server's CPU time stops growing for 3 s, or --curation-window seconds). RSS is read from
/proc/<pid>/status (VmRSS sampled every 50 ms, and VmHWM). Linux only.

    python -m trimem.bench.limits --shape 40x100000 --shape 1000x4000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

WORDS = ("the a to and of in it we you they went back home after work friday market garden "
         "rain coffee train bought small blue house plans weekend sister brother meeting late "
         "project deadline dinner recipe bike trip mountain lake museum ticket phone called "
         "laughed tired happy finally started learning guitar painting running shoes").split()


def text(chars: int, rng: random.Random) -> str:
    out, n = [], 0
    while n < chars:
        w = rng.choice(WORDS)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)[:chars]


def proc_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def run(shape: tuple[int, int], window: float) -> dict:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    n, chars = shape
    home, port, token = tempfile.mkdtemp(prefix="trimem-limits-"), free_port(), "bench-token"
    env = dict(os.environ, TRIMEM_HOME=home, TRIMEM_HTTP_TOKEN=token)
    trimem = str(Path(sys.executable).parent / "trimem")
    proc = subprocess.Popen([trimem, "serve", "--http", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/mcp"
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    rng = random.Random(7)
    messages = [{"content": text(chars, rng), "speaker": "A" if i % 2 else "B", "ref": f"m{i}"}
                for i in range(n)]
    peak = {"rss": 0}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak["rss"] = max(peak["rss"], proc_kb(proc.pid, "VmRSS"))
            time.sleep(0.05)

    def client():
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=3600)
        return http, Client(streamable_http_client(url, http_client=http))

    try:
        ha, a = client()
        hb, b = client()
        async with ha, a, hb, b:
            await a.call_tool("remember", {"messages": [{"content": "warm up the model"}],
                                           "namespace": "warm"})
            await b.call_tool("recall", {"query": "warm", "namespace": "warm", "strategy": "plain"})
            base = proc_kb(proc.pid, "VmRSS")
            threading.Thread(target=sample, daemon=True).start()
            phase = {"name": "remember"}
            lat: dict[str, list[float]] = {"remember": [], "curation": []}

            async def recalls():
                while phase["name"] != "done":
                    t0 = time.perf_counter()
                    await b.call_tool("recall", {"query": "what did they buy at the market?",
                                                 "namespace": "warm", "strategy": "plain"})
                    lat.setdefault(phase["name"], []).append(time.perf_counter() - t0)
                    await asyncio.sleep(0.5)

            task = asyncio.create_task(recalls())
            t0 = time.perf_counter()
            res = await a.call_tool("remember", {"messages": messages, "session_id": "big"})
            took = time.perf_counter() - t0
            assert not res.is_error, res.content
            phase["name"] = "curation"
            t1, last_cpu, still = time.perf_counter(), cpu_s(proc.pid), time.perf_counter()
            while time.perf_counter() - t1 < window:
                await asyncio.sleep(0.5)
                c = cpu_s(proc.pid)
                if c - last_cpu > 0.15:      # the recalls themselves cost a little CPU
                    last_cpu, still = c, time.perf_counter()
                elif time.perf_counter() - still > 3:
                    break
            curation_s = still - t1
            phase["name"] = "done"
            await task
            stop.set()
        hwm = proc_kb(proc.pid, "VmHWM")
    finally:
        proc.terminate()
        proc.wait(timeout=60)

    def p(xs, q):
        return round(1000 * statistics.quantiles(xs, n=100)[q - 1], 1) if len(xs) > 1 else (
            round(1000 * xs[0], 1) if xs else None)

    return {"shape": f"{n}x{chars}", "chars": n * chars, "remember_s": round(took, 2),
            "base_rss_mb": round(base / 1024), "peak_rss_mb": round(max(peak["rss"], 0) / 1024),
            "vmhwm_mb": round(hwm / 1024), "curation_s": round(curation_s, 1),
            **{f"recall_{k}_p50_ms": p(v, 50) for k, v in lat.items() if v},
            **{f"recall_{k}_max_ms": round(1000 * max(v), 1) for k, v in lat.items() if v},
            **{f"recall_{k}_n": len(v) for k, v in lat.items()}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", action="append", default=[], help="NxC: N messages of C chars")
    ap.add_argument("--curation-window", type=float, default=300.0)
    args = ap.parse_args()
    for s in args.shape or ["40x100000", "1000x4000"]:
        n, c = (int(x) for x in s.split("x"))
        print(asyncio.run(run((n, c), args.curation_window)), flush=True)


if __name__ == "__main__":
    main()
