"""How fast ``trimem serve`` stops: stdin EOF, SIGTERM and one SIGINT, over stdio and HTTP.

    python -m trimem.bench.shutdown --runs 10

Each run spawns the real ``trimem serve`` (the console script next to this interpreter), talks
to it (stdio: handshake and a ``remember``, so the store is open and curation is running when
the stop comes; HTTP: an authenticated ``initialize``), then stops it one way and times the exit.
Reported per way: max and median seconds, exit codes, and whether stderr held a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

WAYS = ("eof", "sigterm", "sigint")
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}


def trimem_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("trimem")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "trimem.server.cli"]


def _env(home: Path, **extra) -> dict:
    env = dict(os.environ, TRIMEM_HOME=str(home), **extra)
    env.pop("TRIMEM_LOG_LEVEL", None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _send(proc, msg: dict) -> None:
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def _read_reply(proc, msg_id: int, timeout: float = 120.0) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the server closed stdout")
        msg = json.loads(line)
        if msg.get("id") == msg_id:
            return msg
    raise TimeoutError(f"no reply to request {msg_id}")


def start_stdio(home: Path, work: bool = True) -> subprocess.Popen:
    proc = subprocess.Popen(trimem_cmd() + ["serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=_env(home))
    _send(proc, INIT)
    _read_reply(proc, 1)
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    if work:
        _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "remember", "arguments": {"messages": [
                {"content": f"note {i}: the spare key is under the blue pot", "ref": f"r{i}"}
                for i in range(20)]}}})
        reply = _read_reply(proc, 2)
        assert not reply["result"].get("isError"), reply
    return proc


def start_http(home: Path, token: str = "bench-token") -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen(trimem_cmd() + ["serve", "--http", "--port", str(port)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=_env(home, TRIMEM_HTTP_TOKEN=token))
    url = ""
    assert proc.stderr is not None   # stderr=PIPE
    while not url:   # the server prints the URL it serves on stderr
        line = proc.stderr.readline().decode()
        if not line:
            raise RuntimeError("the HTTP server exited before printing its URL")
        if "http://" in line:
            url = line.split("at ", 1)[1].strip()
    req = urllib.request.Request(url, data=json.dumps(INIT).encode(), method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
    for _ in range(100):   # uvicorn may print before it accepts connections
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                resp.read()
            break
        except (ConnectionError, urllib.error.URLError):
            time.sleep(0.05)
    return proc, url


def stop(proc: subprocess.Popen, way: str, timeout: float = 30.0) -> tuple[float, int | None, str]:
    """Stop ``proc`` one way; (seconds to exit, exit code or None if it did not, stderr)."""
    t0 = time.perf_counter()
    assert proc.stdin is not None and proc.stderr is not None   # both are pipes
    if way == "eof":
        proc.stdin.close()
    else:
        proc.send_signal(signal.SIGTERM if way == "sigterm" else signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return time.perf_counter() - t0, None, proc.stderr.read().decode(errors="replace")
    dt = time.perf_counter() - t0
    if proc.stdin and not proc.stdin.closed:
        proc.stdin.close()
    return dt, proc.returncode, proc.stderr.read().decode(errors="replace")


def run_once(transport: str, way: str, home: Path) -> tuple[float, int | None, str]:
    if transport == "stdio":
        proc = start_stdio(home)
    else:
        proc, _ = start_http(home)
    return stop(proc, way)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--transports", default="stdio,http")
    args = ap.parse_args(argv)
    rows = []
    for transport in args.transports.split(","):
        for way in WAYS:
            times, codes, tracebacks = [], [], 0
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="trimem-stop-") as d:
                    dt, rc, err = run_once(transport, way, Path(d) / "home")
                times.append(dt)
                codes.append(rc)
                tracebacks += ("Traceback" in err or "KeyboardInterrupt" in err)
            rows.append((transport, way, max(times), statistics.median(times), sorted(set(codes),
                         key=str), tracebacks))
            print(f"{transport} {way}: max {max(times):.2f} s, median {statistics.median(times):.2f} s, "
                  f"exit codes {sorted(set(codes), key=str)}, runs with a traceback {tracebacks}",
                  file=sys.stderr)
    print("| transport | way | runs | max s | median s | exit codes | tracebacks |\n"
          "|---|---|---|---|---|---|---|")
    for transport, way, mx, med, codes, tb in rows:
        print(f"| {transport} | {way} | {args.runs} | {mx:.2f} | {med:.2f} | {codes} | {tb} |")


if __name__ == "__main__":
    main()
