"""``trimem hooks install|uninstall --host claude-code``: trimem's entries in the host's files.

Claude Code reads hooks from ``~/.claude/settings.json`` (user) or ``.claude/settings.json``
(project), as ``{"hooks": {EVENT: [{"matcher": ..., "hooks": [{"type": "command", "command":
..., "timeout": seconds}]}]}}``, and MCP servers from ``~/.claude.json`` (user) or ``.mcp.json``
(project) as ``{"mcpServers": {NAME: {"type": "stdio", "command": ..., "args": [...]}}}``
(sources in docs/capture.md).

Install adds one matcher group per event holding trimem's command, and an ``mcpServers.trimem``
entry, to whatever the files hold; every other entry stays as it was. It is idempotent (an
entry of trimem's already there is left alone), writes a backup of each file it changes beside
it first (``<file>.trimem-backup``), and writes beside-then-renames. An ``mcpServers.trimem`` that
is not trimem's own (another command) is left alone and reported.

Uninstall removes only trimem's entries. When a file is still exactly as install left it (its
sha256 is recorded in ``installs.json`` in the user's config folder), the backup's bytes come
back exactly; otherwise only trimem's entries are taken out of the current file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import platformdirs

EVENTS = {"SessionStart": 10, "Stop": 10, "PreCompact": 10, "SessionEnd": 10}
PROMPT_EVENT = ("UserPromptSubmit", 15)
SERVER = "trimem"
OURS = re.compile(r"(^|[\s/\\\"'])trimem(\.exe)?[\"']?\s+hook(\s|$)|trimem\.server\.cli\s+hook")


def trimem_command() -> list[str]:
    """How the host should start trimem: the installed command's absolute path."""
    exe = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    if exe.startswith("trimem"):
        return [str(Path(sys.argv[0]).resolve())]
    found = shutil.which("trimem")
    return [found] if found else [sys.executable, "-m", "trimem.server.cli"]


def files(scope: str, cwd: Path | None = None, home: Path | None = None) -> tuple[Path, Path]:
    """(hooks settings file, MCP servers file) of a scope."""
    if scope == "project":
        root = cwd or Path.cwd()
        return root / ".claude" / "settings.json", root / ".mcp.json"
    h = home or Path.home()
    return h / ".claude" / "settings.json", h / ".claude.json"


def _load(path: Path) -> dict:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path} is not JSON ({exc}); left as it is") from None
    if not isinstance(obj, dict):
        raise ValueError(f"{path} holds JSON but not an object; left as it is")
    return obj


def _is_ours(hook: object) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("command"), str) \
        and bool(OURS.search(hook["command"]))


def hook_command(base: list[str], env_file: str | None, prompt_recall: bool = False) -> str:
    parts = [*base, "hook"]
    if os.environ.get("TRIMEM_HOME"):
        parts += ["--home", os.environ["TRIMEM_HOME"]]
    if env_file:
        parts += ["--env-file", str(Path(env_file).resolve())]
    if prompt_recall:
        parts.append("--prompt-recall")
    return " ".join(shlex.quote(p) for p in parts)


def add_hooks(settings: dict, base: list[str], env_file: str | None, prompt_recall: bool) -> list[str]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError("the settings' \"hooks\" is not an object; left as it is")
    events = dict(EVENTS)
    if prompt_recall:
        events[PROMPT_EVENT[0]] = PROMPT_EVENT[1]
    added = []
    for event, timeout in events.items():
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise ValueError(f"hooks.{event} is not a list; left as it is")
        if any(_is_ours(h) for g in groups if isinstance(g, dict) for h in g.get("hooks") or []):
            continue
        cmd = hook_command(base, env_file, prompt_recall and event == PROMPT_EVENT[0])
        groups.append({"hooks": [{"type": "command", "command": cmd, "timeout": timeout}]})
        added.append(event)
    return added


def remove_hooks(settings: dict) -> list[str]:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    removed = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for g in groups:
            if isinstance(g, dict) and isinstance(g.get("hooks"), list) and \
                    any(_is_ours(h) for h in g["hooks"]):
                rest = [h for h in g["hooks"] if not _is_ours(h)]
                removed.append(event)
                if rest:
                    kept.append(dict(g, hooks=rest))
            else:
                kept.append(g)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del settings["hooks"]
    return removed


def server_entry(base: list[str]) -> dict:
    entry: dict = {"type": "stdio", "command": base[0], "args": [*base[1:], "serve"]}
    if os.environ.get("TRIMEM_HOME"):
        entry["env"] = {"TRIMEM_HOME": os.environ["TRIMEM_HOME"]}
    return entry


def _server_is_ours(entry: object) -> bool:
    return isinstance(entry, dict) and "trimem" in Path(str(entry.get("command", ""))).name \
        or (isinstance(entry, dict) and "trimem.server.cli" in " ".join(map(str, entry.get("args") or [])))


def _sha(data: bytes | None) -> str | None:
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _write(path: Path, obj: dict) -> bytes:
    data = (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    tmp = path.with_name(f".{path.name}.trimem-tmp")
    tmp.write_bytes(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return data


def _manifest_path() -> Path:
    return Path(platformdirs.user_config_dir("trimem", appauthor=False)) / "installs.json"


def _manifest() -> dict:
    try:
        got = json.loads(_manifest_path().read_text(encoding="utf-8"))
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_manifest(m: dict) -> None:
    path = _manifest_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(".installs.json.tmp")
    tmp.write_text(json.dumps(m, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def _change(path: Path, edit) -> dict:
    """Apply ``edit(obj) -> what changed`` to one JSON file, with a backup and a record."""
    before = path.read_bytes() if path.exists() else None
    obj = _load(path)
    what = edit(obj)
    if not what:
        return {"file": str(path), "changed": []}
    if before is not None:
        backup = path.with_name(path.name + ".trimem-backup")
        backup.write_bytes(before)
        os.chmod(backup, path.stat().st_mode & 0o777)
    after = _write(path, obj)
    m = _manifest()
    prev = m.get(str(path), {})
    m[str(path)] = {"original_sha": prev.get("original_sha", _sha(before)) if prev else _sha(before),
                    "existed": prev.get("existed", before is not None) if prev else before is not None,
                    "installed_sha": _sha(after)}
    _save_manifest(m)
    return {"file": str(path), "changed": what}


def install(scope: str, prompt_recall: bool = False, env_file: str | None = None,
            cwd: Path | None = None, home: Path | None = None) -> dict:
    settings_path, servers_path = files(scope, cwd, home)
    base = trimem_command()
    out: dict = {"hooks": _change(settings_path, lambda o: add_hooks(o, base, env_file, prompt_recall))}
    notes: list[str] = []

    def add_server(o: dict) -> list[str]:
        servers = o.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise ValueError("\"mcpServers\" is not an object; left as it is")
        if SERVER in servers:
            if not _server_is_ours(servers[SERVER]):
                notes.append(f"an MCP server named {SERVER!r} that is not trimem is there; left as it is")
            return []
        servers[SERVER] = server_entry(base)
        return [f"mcpServers.{SERVER}"]

    out["server"] = _change(servers_path, add_server)
    out["notes"] = notes
    return out


def uninstall(scope: str, cwd: Path | None = None, home: Path | None = None) -> dict:
    settings_path, servers_path = files(scope, cwd, home)

    def drop_server(o: dict) -> list[str]:
        servers = o.get("mcpServers")
        if isinstance(servers, dict) and _server_is_ours(servers.get(SERVER)):
            del servers[SERVER]
            if not servers:
                del o["mcpServers"]
            return [f"mcpServers.{SERVER}"]
        return []

    return {"hooks": _undo(settings_path, remove_hooks), "server": _undo(servers_path, drop_server)}


def _undo(path: Path, edit) -> dict:
    m = _manifest()
    rec = m.get(str(path))
    now = path.read_bytes() if path.exists() else None
    if rec and now is not None and _sha(now) == rec.get("installed_sha"):
        backup = path.with_name(path.name + ".trimem-backup")
        if not rec.get("existed"):
            path.unlink()
            restored = "removed (install had created it)"
        elif backup.exists() and _sha(backup.read_bytes()) == rec.get("original_sha"):
            tmp = path.with_name(f".{path.name}.trimem-tmp")
            tmp.write_bytes(backup.read_bytes())
            os.chmod(tmp, path.stat().st_mode & 0o777)
            os.replace(tmp, path)
            restored = "restored byte for byte from the backup"
        else:
            restored = None
        if restored:
            del m[str(path)]
            _save_manifest(m)
            return {"file": str(path), "changed": [restored]}
    if now is None:
        return {"file": str(path), "changed": []}
    obj = _load(path)
    what = edit(obj)
    if what:
        _write(path, obj)
    if rec:
        del m[str(path)]
        _save_manifest(m)
    return {"file": str(path), "changed": what}
