"""``trimem hook`` run as a host runs it: a fresh process per event, its JSON on stdin, timed
from spawn to exit. Used by the capture benchmarks (``bench/capture.py``, ``bench/capture_ops.py``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ..capture.state import CaptureState


def hook_command() -> list[str]:
    """The installed ``trimem`` beside this interpreter (what a host's settings run), else
    the module."""
    exe = Path(sys.executable).parent / "trimem"
    if exe.is_file():
        return [str(exe), "hook"]
    found = shutil.which("trimem")
    return [found, "hook"] if found else [sys.executable, "-m", "trimem.server.cli", "hook"]


class HookRunner:
    def __init__(self, home: Path, root: Path, linger_s: float = 20.0, **env: str):
        self.home = home
        base = {k: v for k, v in os.environ.items() if k != "TRIMEM_HOOK_NAMESPACE"}
        self.env = dict(base, TRIMEM_HOME=str(home), TRIMEM_CAPTURE_LINGER_S=str(linger_s), **env)
        self.cmd = hook_command()
        self.times: dict[str, list[float]] = {}
        self.errors: list[str] = []
        self.root = root

    def run(self, event: str, payload: dict, env: dict | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
        t0 = time.perf_counter()
        r = subprocess.run(self.cmd, input=json.dumps(payload).encode(), capture_output=True,
                           env=env or self.env, timeout=timeout)
        self.times.setdefault(event, []).append(1000 * (time.perf_counter() - t0))
        if r.returncode != 0 or r.stderr:
            self.errors.append(f"{event}: rc {r.returncode}: {r.stderr.decode()[-300:]}")
        return r

    def prompt(self, cwd: str, prompt: str, tokens: int) -> str:
        """The context a real ``UserPromptSubmit`` hook prints for ``prompt`` ("" for none)."""
        env = dict(self.env, TRIMEM_HOOK_PROMPT_RECALL="true", TRIMEM_HOOK_PROMPT_TOKENS=str(tokens),
                   TRIMEM_HOOK_PROMPT_TIMEOUT_S="60")
        r = self.run("UserPromptSubmit", {"session_id": "bench", "transcript_path": "",
                                          "cwd": cwd, "hook_event_name": "UserPromptSubmit",
                                          "prompt": prompt}, env=env, timeout=120)
        if not r.stdout.strip():
            return ""
        return json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]

    def settle(self, timeout: float = 600) -> float:
        """Wait until no marker waits and no drainer runs; the seconds it took."""
        state = CaptureState(str(self.home))
        t0 = time.monotonic()
        quiet = 0
        while time.monotonic() - t0 < timeout:
            busy = bool(state.pending()) or state.drainer_running()
            quiet = 0 if busy else quiet + 1
            if quiet >= 3:
                return time.monotonic() - t0
            time.sleep(0.3)
        raise TimeoutError(f"capture did not settle in {timeout:g} s")

    def latency(self) -> dict[str, dict]:
        out = {}
        for ev, ts in self.times.items():
            s = sorted(ts)
            out[ev] = {"n": len(s), "p50": round(s[len(s) // 2], 1),
                       "p95": round(s[min(len(s) - 1, int(len(s) * 0.95))], 1),
                       "max": round(s[-1], 1)}
        return out
