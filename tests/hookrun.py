"""Running ``trimem hook`` as the host does: a fresh process per event, the event's JSON on stdin."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from trimem.capture.state import CaptureState
from trimem.storage import Source


def hook_env(home: Path, tmp: Path, **extra: str) -> dict:
    env = dict(os.environ, TRIMEM_HOME=str(home), TRIMEM_CAPTURE_LINGER_S="0",
               TRIMEM_CURATION="false", HOME=str(tmp / "user-home"),
               XDG_CONFIG_HOME=str(tmp / "xdg-config"), XDG_STATE_HOME=str(tmp / "xdg-state"))
    env.pop("TRIMEM_HOOK_NAMESPACE", None)
    env.update(extra)
    return env


def run_hook(payload: dict | str | bytes, env: dict, *args: str,
             timeout: float = 30) -> subprocess.CompletedProcess:
    data = payload if isinstance(payload, bytes) else (
        payload if isinstance(payload, str) else json.dumps(payload)).encode()
    return subprocess.run([sys.executable, "-m", "trimem.server.cli", "hook", *args],
                          input=data, capture_output=True, env=env, timeout=timeout)


def settle(home: Path, timeout: float = 180) -> None:
    """Wait until no marker waits and no drainer runs."""
    state = CaptureState(str(home))
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not state.pending() and not state.drainer_running():
            time.sleep(0.3)      # a drainer started just now takes the lock within this
            if not state.pending() and not state.drainer_running():
                return
        time.sleep(0.2)
    log = (state.root / "drain.log")
    raise AssertionError(f"capture did not settle; drain.log: "
                         f"{log.read_text()[-3000:] if log.exists() else '(none)'}")


def stored(home: Path, namespace: str) -> list[Source]:
    """Every source row of ``namespace`` (a fresh runtime: what any process would read)."""
    from trimem.server.settings import Settings
    from trimem.tools.runtime import Runtime

    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    try:
        if namespace not in rt.store.namespaces():
            return []
        return rt.space(namespace).sources.all()
    finally:
        rt.close(2.0)
