"""Throughput with 1 and with 8 concurrent MCP clients on one server (remember, then recall).

    python -m trimem.bench.concurrency [--clients 1,8] [--calls 12]

Each client is a real in-memory MCP client; remember calls carry 10 synthetic turns each, recall
calls use strategy ``plain`` at 2,000 tokens over the same namespace. Reported: calls/s and
messages/s for each phase, so one can see whether concurrency serialises behind one lock.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import anyio

from .synth import Synth


async def phase(server, clients: int, calls: int, kind: str, synth: Synth, tag: str) -> float:
    from mcp import Client

    stream = synth.sessions()
    work = [[next(stream) for _ in range(calls)] for _ in range(clients)]
    questions = synth.pick_questions(clients * calls, seed=clients) or ["what happened?"]

    async def one(c_no: int):
        async with Client(server) as c:
            for k, (sid, when, msgs) in enumerate(work[c_no]):
                if kind == "remember":
                    res = await c.call_tool("remember", {"messages": msgs[:10], "namespace": "bench",
                                                         "session_id": f"{tag}-{sid}",
                                                         "session_time": when})
                else:
                    q = questions[(c_no * calls + k) % len(questions)]
                    res = await c.call_tool("recall", {"query": q, "namespace": "bench",
                                                       "strategy": "plain"})
                assert not res.is_error, res.content

    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(clients):
            tg.start_soon(one, i)
    return clients * calls / (time.perf_counter() - t0)


async def run(args) -> list[dict]:
    from ..server.app import build_server
    from ..server.settings import Settings

    server = build_server(Settings(home=args.home or tempfile.mkdtemp(prefix="trimem-conc-")))
    synth = Synth(seed=3)
    await phase(server, 1, 3, "remember", synth, "warm")      # load the model, create tables
    out = []
    for n in [int(x) for x in args.clients.split(",")]:
        calls = max(1, args.calls // n) if args.same_total else args.calls
        r = await phase(server, n, calls, "remember", synth, f"c{n}")
        q = await phase(server, n, calls, "recall", synth, f"c{n}")
        out.append({"clients": n, "remember_calls_s": round(r, 2), "messages_s": round(10 * r, 1),
                    "recall_calls_s": round(q, 2)})
    server.runtime.curation.wait_idle()
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--clients", default="1,8")
    ap.add_argument("--calls", type=int, default=12, help="calls per client per phase")
    ap.add_argument("--same-total", action="store_true", help="split --calls over the clients")
    ap.add_argument("--home", default="")
    args = ap.parse_args(argv)
    rows = anyio.run(run, args)
    print("| clients | remember calls/s | messages/s | recall calls/s |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['clients']} | {r['remember_calls_s']} | {r['messages_s']} | {r['recall_calls_s']} |")


if __name__ == "__main__":
    main()
