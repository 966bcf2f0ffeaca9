"""``trimem hooks install|uninstall``: trimem's entries merged into settings files that already
hold other hooks and servers, and taken out again to the byte."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

from hookrun import hook_env

SETTINGS = """{
  "model": "opus",
  "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
  "hooks": {
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                    "command": "~/.claude/check-bash.sh", "timeout": 5}]}]
  }
}
"""
CLAUDE_JSON = """{"numStartups": 41, "mcpServers": {"github": {"type": "stdio", "command": "npx",
 "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"X": "1"}}},
 "projects": {"/some/where": {"allowedTools": []}}}
"""


def _cli(env, *args, cwd=None):
    return subprocess.run([sys.executable, "-m", "trimem.server.cli", *args], capture_output=True,
                          env=env, cwd=cwd, timeout=60)


def test_user_scope_install_then_uninstall_is_byte_identical(tmp_path):
    env = hook_env(tmp_path / "home", tmp_path)
    user = tmp_path / "user-home"
    (user / ".claude").mkdir(parents=True)
    settings, claude = user / ".claude" / "settings.json", user / ".claude.json"
    settings.write_text(SETTINGS)
    claude.write_text(CLAUDE_JSON)

    r = _cli(env, "hooks", "install", "--scope", "user")
    assert r.returncode == 0, r.stderr
    s = json.loads(settings.read_text())
    assert s["model"] == "opus" and s["permissions"]["deny"] == ["Read(./.env)"]
    assert s["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "~/.claude/check-bash.sh"
    stop = [h["command"] for g in s["hooks"]["Stop"] for h in g["hooks"]]
    assert stop[0] == "notify-send done" and len(stop) == 2 and " hook" in stop[1]
    for ev in ("SessionStart", "PreCompact", "SessionEnd"):
        assert len(s["hooks"][ev]) == 1
    assert "UserPromptSubmit" not in s["hooks"]
    c = json.loads(claude.read_text())
    assert c["mcpServers"]["github"]["args"][1] == "@modelcontextprotocol/server-github"
    assert c["mcpServers"]["trimem"]["type"] == "stdio" and c["numStartups"] == 41
    assert (user / ".claude" / "settings.json.trimem-backup").read_text() == SETTINGS

    # the installed command is one a host can run: a SessionStart answers and exits 0
    cmd = shlex.split(stop[1])
    run = subprocess.run(cmd, input=json.dumps({"hook_event_name": "SessionStart",
                         "session_id": "s", "cwd": str(tmp_path), "source": "startup"}).encode(),
                         capture_output=True, env=env, timeout=30)
    assert run.returncode == 0 and run.stderr == b""

    once = (settings.read_bytes(), claude.read_bytes())
    assert _cli(env, "hooks", "install", "--scope", "user").returncode == 0   # idempotent
    assert (settings.read_bytes(), claude.read_bytes()) == once

    r = _cli(env, "hooks", "uninstall", "--scope", "user")
    assert r.returncode == 0, r.stderr
    assert settings.read_text() == SETTINGS and claude.read_text() == CLAUDE_JSON


def test_uninstall_after_the_user_edited_keeps_their_edit(tmp_path):
    env = hook_env(tmp_path / "home", tmp_path)
    proj = tmp_path / "repo"
    (proj / ".claude").mkdir(parents=True)
    settings = proj / ".claude" / "settings.json"
    settings.write_text(SETTINGS)
    assert _cli(env, "hooks", "install", "--scope", "project", "--prompt-recall",
                cwd=proj).returncode == 0
    s = json.loads(settings.read_text())
    assert "--prompt-recall" in s["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    assert json.loads((proj / ".mcp.json").read_text())["mcpServers"]["trimem"]
    s["model"] = "sonnet"                        # the user changes something else meanwhile
    settings.write_text(json.dumps(s, indent=2))
    assert _cli(env, "hooks", "uninstall", "--scope", "project", cwd=proj).returncode == 0
    after = json.loads(settings.read_text())
    assert after["model"] == "sonnet"
    assert after["hooks"] == json.loads(SETTINGS)["hooks"]
    assert not (proj / ".mcp.json").exists()     # install created it; uninstall removes it


def test_a_settings_file_that_is_not_json_is_left_alone(tmp_path):
    env = hook_env(tmp_path / "home", tmp_path)
    user = tmp_path / "user-home"
    (user / ".claude").mkdir(parents=True)
    bad = user / ".claude" / "settings.json"
    bad.write_text('{"hooks": [oops')
    r = _cli(env, "hooks", "install", "--scope", "user")
    assert r.returncode == 1 and b"settings.json" in r.stderr
    assert bad.read_text() == '{"hooks": [oops' and not (user / ".claude.json").exists()
