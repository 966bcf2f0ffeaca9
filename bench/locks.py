"""A lock holder killed (SIGKILL) or stopped (SIGSTOP) in the middle of ``remember``: how long
does another process's ``remember`` on the same namespace take, and is anything lost or stored
twice?

    python -m trimem.bench.locks --rounds 20 [--lease 10] [--wait 30]

A holder process remembers batches of 40 messages (each with a ref) in a loop and appends
each acknowledged batch to an ack file. Each round, this process watches the namespace's lock
file until it names the holder, sends the signal, checks the lock still names it (else it lets
the holder go on and tries again), then times how long it takes to get the lock, and then sends
the holder's interrupted call again itself (the same refs, as a host retrying it would) and
times that ``remember``. A stopped holder is resumed afterwards (it must notice it lost the lock
and store nothing twice); a killed one is started again. At the end every acknowledged ref must
be stored exactly once, and no ref twice. POSIX only (signals).
tests/reliability/test_lock_holders.py runs the same code with fewer rounds and a short lease.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

NS = "locks"
BATCH = 40


def settings(home: str, lease: float, wait: float):
    from ..server.settings import Settings

    return Settings(home=home, curation=False, lock_lease_s=lease, lock_wait_s=wait)


def lock_path(home: str) -> Path:
    from ..storage.names import namespace_key

    return Path(home) / "_locks" / f"{namespace_key(NS)}.lease"


def batch(pid: int, call: int) -> list:
    """The holder's ``call``-th batch (a retry of it from another process sends the same)."""
    from ..tools.remember import Message

    return [Message(content=f"holder {pid} call {call} note {k}: the boiler was serviced",
                    speaker="u", ref=f"h{pid}-{call}-{k}") for k in range(BATCH)]


def holder(home: str, acks: str, lease: float, wait: float) -> None:
    """Remember batches until killed; each acknowledged batch's refs go to ``acks``."""
    from ..tools.remember import remember
    from ..tools.runtime import Runtime

    rt = Runtime(settings(home, lease, wait).to_config())
    pid, call = os.getpid(), 0
    with open(acks, "a") as out:
        while True:
            msgs = batch(pid, call)
            remember(rt, msgs, session_id=f"holder-{pid}", namespace=NS)
            out.write(json.dumps([m.ref for m in msgs]) + "\n")
            out.flush()
            os.fsync(out.fileno())
            call += 1


def in_flight(acks: str, pid: int) -> int:
    """The number of the call the holder ``pid`` was making (its acknowledged calls so far)."""
    try:
        lines = Path(acks).read_text().splitlines()
    except FileNotFoundError:
        return 0
    return sum(1 for line in lines if line.startswith(f'["h{pid}-') and line.endswith("]"))


def start_holder(home: str, acks: str, lease: float, wait: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "trimem.bench.locks", "--holder", home, acks,
                             "--lease", str(lease), "--wait", str(wait)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def catch(proc: subprocess.Popen, path: Path, sig: int, timeout: float = 120.0) -> bool:
    """Send ``sig`` to ``proc`` while it holds the lock at ``path``; True once it was sent to a
    holder that still held the lock afterwards."""
    from ..storage.locks import holder_pid

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the holder exited: {proc.stderr.read().decode()[-2000:]}"
                               if proc.stderr else "the holder exited")
        if holder_pid(path) == proc.pid:
            os.kill(proc.pid, sig)
            if sig == signal.SIGSTOP:
                time.sleep(0.05)   # stopped now; did it still hold the lock?
            if holder_pid(path) == proc.pid:
                return True
            if sig == signal.SIGSTOP:
                os.kill(proc.pid, signal.SIGCONT)
            else:
                return False   # killed just after letting go: the round is a plain kill
        time.sleep(0.0005)
    raise RuntimeError("the holder never held the lock")


def rounds(home: str, n: int, lease: float = 10.0, wait: float = 30.0) -> dict:
    """``n`` rounds of kill and ``n`` of stop; the other call's times and the checks."""
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime

    acks = str(Path(home).parent / f"{Path(home).name}.acks")
    rt = Runtime(settings(home, lease, wait).to_config())
    remember(rt, [Message(content="warm up", ref="warm")], session_id="other", namespace=NS)
    path = lock_path(home)
    took: dict[str, list[float]] = {"kill": [], "stop": []}
    taken: dict[str, list[float]] = {"kill": [], "stop": []}
    held: dict[str, int] = {"kill": 0, "stop": 0}
    mine: list[str] = []
    proc = start_holder(home, acks, lease, wait)
    try:
        for _ in range(n):
            for name, sig in (("kill", signal.SIGKILL), ("stop", signal.SIGSTOP)):
                held[name] += catch(proc, path, sig)
                if sig == signal.SIGKILL:
                    proc.wait()   # reaped, as a host reaps the processes it started
                # the host retries the holder's call from this process: the same refs, the
                # same session (stored once whoever gets there first)
                msgs = batch(proc.pid, in_flight(acks, proc.pid))
                t0 = time.monotonic()
                with rt.store.write_lock(NS):   # how long until this process gets the lock
                    taken[name].append(time.monotonic() - t0)
                t0 = time.monotonic()
                remember(rt, msgs, session_id=f"holder-{proc.pid}", namespace=NS)
                took[name].append(time.monotonic() - t0)
                mine += [m.ref or "" for m in msgs]
                if sig == signal.SIGKILL:
                    proc = start_holder(home, acks, lease, wait)
                else:
                    os.kill(proc.pid, signal.SIGCONT)
                    time.sleep(0.5)   # it resumes, finds it lost the lock, and carries on
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    rt.close(30)
    return {"took": took, "taken": taken, "held": held, **check(home, acks, mine, lease, wait)}


def check(home: str, acks: str, mine: list[str], lease: float, wait: float) -> dict:
    from ..tools.runtime import Runtime

    acked = [ref for line in Path(acks).read_text().splitlines() if line.endswith("]")
             for ref in json.loads(line)]
    rt = Runtime(settings(home, lease, wait).to_config())
    rows = rt.space(NS).sources.all()
    rt.close(10)
    count = Counter((r.session_id, r.ref) for r in rows)
    stored = {ref for _, ref in count if ref is not None}
    return {"acked": len(acked), "lost": sorted(set(acked + mine) - stored),
            "doubled": sorted(ref or "" for (_, ref), c in count.items() if c > 1),
            "ids_doubled": len(rows) - len({r.id for r in rows})}


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--lease", type=float, default=10.0)
    ap.add_argument("--wait", type=float, default=30.0)
    ap.add_argument("--holder", nargs=2, metavar=("HOME", "ACKS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.holder:
        holder(args.holder[0], args.holder[1], args.lease, args.wait)
        return
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = rounds(str(Path(tmp) / "home"), args.rounds, args.lease, args.wait)

    def stats(xs: list[float]) -> dict:
        xs = sorted(xs)
        return {"n": len(xs), "max_s": round(xs[-1], 3), "median_s": round(xs[len(xs) // 2], 3)}

    print(json.dumps({"lease_s": args.lease, "wait_s": args.wait,
                      "lock_taken": {k: stats(v) for k, v in out["taken"].items()},
                      "remember": {k: stats(v) for k, v in out["took"].items()},
                      "held_when_signalled": out["held"], "acked_refs": out["acked"],
                      "lost": out["lost"], "doubled": out["doubled"],
                      "ids_doubled": out["ids_doubled"]}))


if __name__ == "__main__":
    main()
