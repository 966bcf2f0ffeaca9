"""The repository as a Claude Code plugin: its manifest, its hooks and its launcher, run the way
the host runs a plugin's hook (``${CLAUDE_PLUGIN_ROOT}`` set, the command through a shell)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import trimem
from trimem.capture.install import EVENTS
from hookrun import hook_env

ROOT = Path(trimem.__file__).resolve().parent
LAUNCHER = "${CLAUDE_PLUGIN_ROOT}/hooks/run-trimem"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the launcher is a POSIX shell script")


def _manifest() -> dict:
    return json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())


def test_manifest_names_the_plugin_and_its_server():
    m = _manifest()
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", m["name"])
    server = m["mcpServers"]["trimem"]
    assert server["command"] == LAUNCHER and server["args"] == ["serve"]
    launcher = ROOT / "hooks" / "run-trimem"
    assert launcher.is_file() and os.access(launcher, os.X_OK)


def test_hooks_are_the_ones_install_writes():
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == set(EVENTS)
    for event, groups in hooks.items():
        (group,) = groups
        (hook,) = group["hooks"]
        assert hook == {"type": "command", "command": f"{LAUNCHER} hook", "timeout": EVENTS[event]}


def _run(command: str, payload: dict, env: dict) -> subprocess.CompletedProcess:
    # the host expands ${CLAUDE_PLUGIN_ROOT} and runs the command through a shell
    return subprocess.run(["/bin/sh", "-c", command.replace("${CLAUDE_PLUGIN_ROOT}", str(ROOT))],
                          input=json.dumps(payload).encode(), capture_output=True, env=env,
                          timeout=60)


def test_launcher_runs_the_installed_command(tmp_path):
    env = hook_env(tmp_path / "home", tmp_path, CLAUDE_PLUGIN_ROOT=str(ROOT),
                   PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin")
    assert shutil.which("trimem", path=env["PATH"]), "the test venv has the trimem command"
    payload = {"session_id": "s1", "transcript_path": "", "cwd": str(tmp_path),
               "hook_event_name": "SessionStart", "source": "startup"}
    r = _run(f"{LAUNCHER} hook", payload, env)
    assert r.returncode == 0 and r.stderr == b"" and r.stdout == b""   # an empty memory: nothing
    bad = _run(f"{LAUNCHER} hook", {"hook_event_name": 7}, env)          # fail-open
    assert bad.returncode == 0 and b"trimem hook" in bad.stderr


def test_launcher_without_trimem_or_uv_says_so_and_exits_0(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("sh", "dirname"):   # what the launcher itself needs, and nothing else
        found = shutil.which(tool)
        assert found
        (bare / tool).symlink_to(found)
    env = {"PATH": str(bare), "HOME": str(tmp_path), "CLAUDE_PLUGIN_ROOT": str(ROOT)}
    r = _run(f"{LAUNCHER} hook", {"hook_event_name": "Stop"}, env)
    assert r.returncode == 0
    assert b"neither 'trimem' nor 'uvx'" in r.stderr
