"""The namespace a project's captured memory goes to, and the hook input it comes from.

A project is its git work tree's top folder (the nearest folder upwards holding a ``.git``
entry, a folder or a worktree's file), else the working folder itself. Its namespace is
``<folder name>-<first 8 hex digits of sha256(real path)>``, lower-case, every run of other
characters than ``a-z 0-9 . _ -`` made one ``-``: readable, stable across sessions and
renames of nothing but the folder's parents, and two projects of one name never share one.
``TRIMEM_HOOK_NAMESPACE`` (or ``--namespace``) puts every project into one namespace instead.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
import json

MAX_GIT_UP = 64    # folders walked upwards looking for .git


def project_root(cwd: str) -> Path:
    start = Path(os.path.realpath(cwd or "."))
    here = start
    for _ in range(MAX_GIT_UP):
        if (here / ".git").exists():
            return here
        if here.parent == here:
            break
        here = here.parent
    return start


def project_namespace(cwd: str) -> str:
    root = project_root(cwd)
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:8]
    slug = re.sub(r"[^a-z0-9._-]+", "-", root.name.lower()).strip("-.")[:40] or "project"
    return f"{slug}-{digest}"


@dataclass(frozen=True)
class HookInput:
    """The fields trimem reads of a host's hook input (Claude Code's names; docs/capture.md)."""

    event: str
    session_id: str
    transcript_path: str | None
    cwd: str
    source: str | None = None       # SessionStart: startup, resume, clear, compact
    prompt: str | None = None       # UserPromptSubmit
    reason: str | None = None       # SessionEnd


class BadInput(ValueError):
    """The hook's stdin is not a hook input trimem can act on (said on stderr; exit 0)."""


def _opt_str(obj: dict, name: str, limit: int = 4096) -> str | None:
    val = obj.get(name)
    if val is None:
        return None
    if not isinstance(val, str):
        raise BadInput(f"{name} is a {type(val).__name__}, not a string")
    if len(val) > limit:
        raise BadInput(f"{name} is {len(val)} characters (at most {limit})")
    return val


def parse_input(raw: str) -> HookInput:
    try:
        obj = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise BadInput(f"stdin is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise BadInput("stdin is JSON but not an object")
    event = _opt_str(obj, "hook_event_name", 64)
    if not event:
        raise BadInput("no hook_event_name in the input")
    sid = _opt_str(obj, "session_id", 512) or ""
    return HookInput(event=event, session_id=sid,
                     transcript_path=_opt_str(obj, "transcript_path"),
                     cwd=_opt_str(obj, "cwd") or os.getcwd(),
                     source=_opt_str(obj, "source", 64), prompt=_opt_str(obj, "prompt", 100_000),
                     reason=_opt_str(obj, "reason", 64))
