"""Two ``trimem serve`` processes on one memory folder: how long after A forgets a message does B
stop returning it? Per strategy, each run: A remembers a session holding a unique secret line,
both processes see it curated, B recalls it (so B's caches hold it), A forgets it by ref, and B
recalls every 50 ms until neither ``context`` nor ``sources`` carries it. Reported: when B's
last recall that still returned it started, and when B's first answer without it ended (seconds
after A's forget returned; max and median over the runs).

    python -m trimem.bench.forget_reach --runs 20

The tests (tests/reliability/test_forget_reach.py) run the same code with fewer repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

STRATEGIES = ("plain", "hybrid", "workspace", "wiki", "auto")
NS = "reach"


def stdio(home: Path, **env_extra: str) -> StdioServerParameters:
    env = dict(os.environ, TRIMEM_HOME=str(home), **env_extra)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return StdioServerParameters(command="trimem", args=["serve"], env=env)


def _data(res) -> dict:
    if res.is_error:
        raise RuntimeError(" ".join(getattr(c, "text", "") for c in res.content))
    return res.structured_content


async def recall(c, query: str, strategy: str) -> dict:
    return _data(await c.call_tool("recall", {"query": query, "strategy": strategy,
                                              "namespace": NS, "budget_tokens": 1000}))


def holds(rec: dict, secret: str) -> bool:
    return secret in rec["context"] or any(secret in (s.get("text") or "") for s in rec["sources"])


async def until(pred, timeout: float, step: float = 0.05):
    end = time.monotonic() + timeout
    while True:
        got = await pred()
        if got or time.monotonic() > end:
            return got
        await anyio.sleep(step)


def session(run: int, secret: str) -> list[dict]:
    return [{"content": f"My locker code at the climbing gym is {secret}.", "speaker": "Noa",
             "ref": f"s{run}"},
            {"content": "Good to know, I will keep it safe for you.", "speaker": "Eli",
             "ref": f"o{run}"},
            {"content": "We also planned a hike to the lake for next weekend.", "speaker": "Noa",
             "ref": f"h{run}"}]


async def one_run(a, b, strategy: str, run: int,
                  timeout: float = 60.0) -> tuple[float, float, str]:
    """Seconds from A's forget returning to the start of B's last recall that still returned the
    secret (0: none did), and to the end of B's first recall that did not (inf: none within
    ``timeout``); and the secret."""
    secret = f"zq{uuid.uuid4().hex[:10]}"
    query = "what is the locker code at the climbing gym"
    _data(await a.call_tool("remember", {"messages": session(run, secret), "namespace": NS,
                                         "session_id": f"{strategy}-{run}",
                                         "session_time": "2024-05-01T10:00:00Z"}))

    async def curated(c):
        rec = await recall(c, query, strategy)
        return holds(rec, secret) and "fell back" not in rec["route_reason"]

    for c in (a, b):   # both processes see it curated, and B's caches hold it
        if not await until(lambda c=c: curated(c), 120.0):
            raise RuntimeError(f"{strategy}: the secret never showed up in a recall")
    _data(await a.call_tool("forget", {"refs": [f"s{run}"], "namespace": NS}))
    t0 = time.monotonic()

    stale = [0.0]

    async def gone():
        start = time.monotonic() - t0
        if holds(await recall(b, query, strategy), secret):
            stale.append(start)
            return False
        return True

    ok = await until(gone, timeout)
    return max(stale), (time.monotonic() - t0 if ok else float("inf")), secret


async def measure(home: Path, strategies=STRATEGIES, runs: int = 1,
                  timeout: float = 60.0) -> tuple[dict[str, list[tuple[float, float]]], list[str]]:
    """Per strategy and run: (last stale recall's start, first clean answer's end) in seconds
    after the forget; and the secrets that were forgotten."""
    out: dict[str, list[tuple[float, float]]] = {s: [] for s in strategies}
    secrets: list[str] = []
    async with Client(stdio(home), read_timeout_seconds=180) as a, \
            Client(stdio(home), read_timeout_seconds=180) as b:
        for run in range(runs):
            for s in strategies:
                stale, clean, secret = await one_run(a, b, s, run, timeout)
                out[s].append((stale, clean))
                secrets.append(secret)
    return out, secrets


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        res, _ = anyio.run(measure, Path(tmp) / "home", args.strategies.split(","), args.runs)
    def stats(xs: list[float]) -> dict:
        return {"max_s": round(max(xs), 3), "median_s": round(sorted(xs)[len(xs) // 2], 3)}

    print(json.dumps({s: {"runs": len(v), "last_stale_start": stats([x for x, _ in v]),
                          "first_clean_end": stats([y for _, y in v])} for s, v in res.items()}))


if __name__ == "__main__":
    main()
