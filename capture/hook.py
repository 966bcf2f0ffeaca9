"""``trimem hook``: what one hook event does, as a fresh process the host starts.

Every event is one command (``trimem hook``, the event named in its input), so one line of
settings covers them all. Each returns the text to print on stdout (or "") and never raises
for its own failures: ``server/cli.py`` prints those to stderr, records them for
``trimem status`` and exits 0, so a broken memory never breaks the host (fail-open).

- ``Stop`` / ``SubagentStop`` / ``PreCompact`` / ``SessionEnd``: a pending marker for the
  transcript, and the drainer started if none runs (``capture/drain.py``). Milliseconds: no
  LanceDB, no model.
- ``SessionStart``: the project's context, read from the file the drainer wrote
  (``capture/digest.py``), as ``hookSpecificOutput.additionalContext``.
- ``UserPromptSubmit`` (only with ``TRIMEM_HOOK_PROMPT_RECALL=true``): ``recall`` for the
  prompt within its own budget, added only when it does not abstain. This one opens the store
  and the model in the hook process (seconds; bounded by ``hook_prompt_timeout_s``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Callable

from .project import HookInput, project_namespace
from .state import CaptureState
from . import digest

if TYPE_CHECKING:
    from ..tools.runtime import Config, Runtime

CAPTURE_EVENTS = ("Stop", "SubagentStop", "PreCompact", "SessionEnd")
HOSTS = ("claude-code",)


@dataclass(frozen=True)
class HookSettings:
    home: str
    namespace: str | None
    start_tokens: int
    prompt_recall: bool
    prompt_tokens: int
    prompt_timeout_s: float
    env_file: str | None = None
    # the runtime's configuration, built by the command that runs the hook (``server/``
    # reads the settings; this layer only uses them), called only by ``UserPromptSubmit``
    config: Callable[[], Config] | None = None


def namespace_for(hs: HookSettings, inp: HookInput) -> str:
    return hs.namespace or project_namespace(inp.cwd)


def handle(inp: HookInput, hs: HookSettings, host: str = "claude-code") -> str:
    state = CaptureState(hs.home)
    if inp.event in CAPTURE_EVENTS:
        return _capture(inp, hs, state, host)
    if inp.event == "SessionStart":
        return _session_start(inp, hs, state)
    if inp.event == "UserPromptSubmit":
        return _prompt(inp, hs) if hs.prompt_recall else ""
    return ""   # an event trimem does not act on: nothing to say


def _capture(inp: HookInput, hs: HookSettings, state: CaptureState, host: str) -> str:
    if not inp.transcript_path:
        raise ValueError(f"{inp.event} input has no transcript_path")
    if not os.path.isfile(inp.transcript_path):
        raise ValueError(f"transcript {inp.transcript_path!r} is not a readable file")
    state.add_pending({"transcript_path": inp.transcript_path, "session_id": inp.session_id,
                       "namespace": namespace_for(hs, inp), "event": inp.event, "host": host,
                       "at": datetime.now().astimezone().isoformat(timespec="seconds")})
    start_drainer(hs, state)
    return ""


def _session_start(inp: HookInput, hs: HookSettings, state: CaptureState) -> str:
    if hs.start_tokens <= 0:
        return ""
    ns = namespace_for(hs, inp)
    text = digest.read(state, ns)
    if text is None:
        if any(r.get("namespace") == ns for r in state.transcripts()):
            start_drainer(hs, state)   # it rebuilds a missing or out-of-date context
        return ""
    return _context("SessionStart", text)


def _context(event: str, text: str) -> str:
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
                      ensure_ascii=False)


def prompt_context(rt: Runtime, namespace: str, prompt: str, budget_tokens: int) -> str:
    """What ``UserPromptSubmit`` adds for ``prompt``: recall's context within its own budget,
    or "" when the namespace holds nothing or recall abstains (the capture benchmark scores
    exactly this)."""
    from ..tools.recall import recall  # lazy: the tools layer, for prompt recall only

    if not prompt.strip() or namespace not in rt.store.namespaces():
        return ""
    res = recall(rt, prompt[:4000], namespace=namespace, budget_tokens=budget_tokens)
    return res.context if not res.abstain and res.context.strip() else ""


def _prompt(inp: HookInput, hs: HookSettings) -> str:
    """Recall for the prompt; "" when it abstains, fails or runs past its time."""
    prompt = inp.prompt
    if not prompt or not prompt.strip():
        return ""
    out: list[str] = []

    def run() -> None:
        from ..tools.runtime import Runtime  # lazy: the tools layer, for prompt recall only

        if hs.config is None:
            raise RuntimeError("prompt recall needs the runtime's configuration")
        rt = Runtime(hs.config())
        rt.curation.stop(0)   # a one-shot reader: curation belongs to the drainer
        try:
            text = prompt_context(rt, namespace_for(hs, inp), prompt, hs.prompt_tokens)
            if text:
                out.append(_context("UserPromptSubmit", text))
        finally:
            rt.close(2.0)

    worker = threading.Thread(target=run, name="trimem-hook-recall", daemon=True)
    worker.start()
    worker.join(hs.prompt_timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"recall took over {hs.prompt_timeout_s:g} s; nothing added")
    return out[0] if out else ""


def start_drainer(hs: HookSettings, state: CaptureState) -> bool:
    """Start ``trimem hook --drain`` detached from the host (own session, no stdin/stdout; its
    stderr to ``drain.log``) unless a drainer holds the lock. True if one was started."""
    if state.drainer_running():
        return False
    state.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = state.root / "drain.log"
    if log_path.exists() and log_path.stat().st_size > 1_000_000:
        log_path.replace(state.root / "drain.log.1")
    cmd = [sys.executable, "-m", "trimem.server.cli", "hook", "--drain"]
    if hs.env_file:
        cmd += ["--env-file", hs.env_file]
    env = dict(os.environ, TRIMEM_HOME=hs.home)
    kw: dict = {"start_new_session": True} if os.name == "posix" else {
        "creationflags": getattr(subprocess, "DETACHED_PROCESS", 0)
        | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    with open(log_path, "ab") as log:
        child = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=log, close_fds=True, env=env, cwd=str(state.root), **kw)
    state.mark_starting(child.pid)
    return True
