"""``trimem import --from codex|gemini [PATH]``: other agent CLIs' local session logs, stored as
the hooks store Claude Code's transcript.

Each log goes through the same ``capture()`` as a hook's transcript (``drain.py``): read from
where its last import ended (a cursor per log in the capture state, shown by ``trimem status``),
redacted, stored through ``remember`` under the shared rule, each entry with a stable ref, so a
second import stores only what the log gained, and a forgotten message never comes back. The
namespace is the project's, from the working folder the log names (``project.py``, as for the
hooks), unless ``--namespace`` names one; a log that names none goes to ``default``.

PATH is one log, or a folder searched (symlinked folders not followed) for the host's log
files: ``rollout-*.jsonl`` for Codex, ``session-*.jsonl`` / ``session-*.json`` for Gemini CLI
(a ``.json`` beside its ``.jsonl`` successor is left out: the CLI moved it there). Without PATH,
the host's own folder: ``$CODEX_HOME/sessions`` (``~/.codex/sessions``) or
``$GEMINI_CLI_HOME/.gemini/tmp`` (``~/.gemini/tmp``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import AGENT_LOGS, codex, gemini
from .state import CaptureState, transcript_key
from .drain import Report, capture
from .project import project_namespace

if TYPE_CHECKING:
    from ..tools.runtime import Runtime

MAX_LOGS = 100_000     # files one import looks at; a folder with more is cut (and says so)


def default_path(host: str) -> Path:
    if host == "codex":
        base = os.environ.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
        return Path(base) / "sessions"
    base = os.environ.get("GEMINI_CLI_HOME") or os.path.expanduser("~")
    return Path(base) / ".gemini" / "tmp"


def _is_log(host: str, name: str) -> bool:
    if host == "codex":
        return name.startswith("rollout-") and name.endswith((".jsonl", ".jsonl.zst"))
    return name.startswith("session-") and name.endswith((".jsonl", ".json"))


@dataclass
class Found:
    logs: list[Path] = field(default_factory=list)
    not_read: list[dict] = field(default_factory=list)


def find_logs(host: str, path: Path) -> Found:
    """The logs under ``path`` (or ``path`` itself); raises ``FileNotFoundError`` when it is
    neither a file nor a folder."""
    found = Found()
    if path.is_file():
        names = [path]
    elif path.is_dir():
        names = []
        for top, dirs, files in os.walk(path, followlinks=False):
            dirs.sort()
            names += [Path(top) / f for f in sorted(files) if _is_log(host, f)]
            if len(names) > MAX_LOGS:
                found.not_read.append({"path": str(path), "error": f"over {MAX_LOGS} logs; "
                                       "import its sub-folders one by one"})
                names = names[:MAX_LOGS]
                break
    else:
        raise FileNotFoundError(f"{path} is neither a log file nor a folder")
    for p in names:
        if p.name.endswith(".zst"):
            found.not_read.append({"path": str(p), "error": "a zstd-compressed rollout; "
                                   "decompress it (zstd -d) and import the .jsonl"})
        elif (host == "gemini" and p != path and p.suffix == ".json"
              and p.with_suffix(".jsonl").exists()):
            continue   # the CLI moved this session into the .jsonl beside it
        else:
            found.logs.append(p)
    return found


def _head(host: str, path: str) -> tuple[str | None, str | None]:
    return (codex.head if host == "codex" else gemini.head)(path)


def _namespace(cwd: str | None) -> str:
    if not cwd:
        return "default"
    try:
        return project_namespace(cwd)
    except (OSError, ValueError):
        return "default"


def import_log(rt: Runtime, state: CaptureState, host: str, path: Path,
               namespace: str | None) -> dict:
    """Store what one log holds beyond its cursor; its report (errors included, never raised)."""
    real = os.path.realpath(path)
    out = {"path": str(path), "session_id": None, "namespace": namespace}
    try:
        sid, cwd = _head(host, real)
    except (OSError, ValueError, RuntimeError) as exc:   # unreadable; a symlink loop
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return out | _report(Report(errors=[f"cannot read {path}: {why}"[:500]]))
    key = transcript_key(real)
    cur = state.cursor(key)
    ns = namespace or (cur.get("namespace") if cur.get("transcript_path") == real else None) \
        or _namespace(cwd)
    marker = {"transcript_path": real, "session_id": sid or "", "namespace": ns,
              "event": "import", "host": host,
              "at": datetime.now().astimezone().isoformat(timespec="seconds")}
    rep = capture(rt, state, key, marker)
    got = state.cursor(key)
    return out | {"session_id": got.get("session_id") or sid, "namespace": ns} | _report(rep)


def _report(rep) -> dict:
    return {"stored": rep.stored, "already_stored": rep.already, "skipped": dict(rep.skipped),
            "redacted": dict(rep.redacted), "errors": list(rep.errors)}


def import_found(rt: Runtime | None, home: str, host: str, where: Path, found: Found,
                 namespace: str | None = None,
                 progress: Callable[[int, int, str], None] | None = None) -> tuple[dict, int]:
    """Import every log ``find_logs`` found (no runtime is needed when it found none), telling
    ``progress`` (done, total, name) after each; the report and the exit code: 1 when a log
    could not be read or stored, else 0."""
    if host not in AGENT_LOGS:
        raise ValueError(f"unknown host {host!r} (known: {', '.join(AGENT_LOGS)})")
    logs: list[dict] = []
    for p in found.logs:
        if rt is None:
            raise ValueError("importing logs needs a runtime")
        logs.append(import_log(rt, CaptureState(home), host, p, namespace))
        if progress is not None:
            progress(len(logs), len(found.logs), p.name)
    report = {"host": host, "path": str(where), "logs": logs, "not_read": found.not_read,
              "stored": sum(x["stored"] for x in logs),
              "already_stored": sum(x["already_stored"] for x in logs),
              "errors": sum(len(x["errors"]) for x in logs) + len(found.not_read)}
    return report, 1 if report["errors"] else 0
