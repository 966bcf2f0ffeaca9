"""The CLI of capture: ``trimem hook``, ``trimem hooks install|uninstall`` and ``trimem status``.

``trimem hook`` is started by the host for every hook event; it must answer fast and never fail
the host: any failure of its own is printed to stderr, recorded for ``trimem status``, and the
process exits 0 (fail-open).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
import argparse
import logging
import os

from ..capture.hook import HookSettings, handle
from ..capture.install import install, uninstall
from ..capture.project import parse_input
from ..capture.state import CaptureState
from ..capture.status import capture_status
from ..providers.registry import choose_embedder
from ..tools.errors import ToolFailure
from .settings import load_settings
from .transfer_cli import bar, load, runtime

MAX_INPUT_BYTES = 1_000_000


def add_parsers(sub, common) -> dict:
    h = sub.add_parser("hook", parents=[common], help="run by the host for each hook event "
                       "(reads its JSON on stdin; docs/capture.md)")
    h.add_argument("--host", default="claude-code", choices=["claude-code"],
                   help="whose hook input and transcript format (default: claude-code)")
    h.add_argument("--namespace", default=None,
                   help="the namespace to capture into (default: one per project)")
    h.add_argument("--home", default=None, help="the memory folder (default: TRIMEM_HOME)")
    h.add_argument("--prompt-recall", action="store_true",
                   help="UserPromptSubmit: recall for the prompt (TRIMEM_HOOK_PROMPT_RECALL)")
    h.add_argument("--drain", action="store_true", help=argparse_hidden())
    hs = sub.add_parser("hooks", parents=[common], help="install or remove trimem's hooks and "
                        "MCP server entry in a host's settings")
    hs.add_argument("action", choices=["install", "uninstall"])
    hs.add_argument("--host", default="claude-code", choices=["claude-code"])
    hs.add_argument("--scope", default="user", choices=["user", "project"],
                    help="user: ~/.claude/settings.json and ~/.claude.json; project: "
                    ".claude/settings.json and .mcp.json in the current folder")
    hs.add_argument("--prompt-recall", action="store_true",
                    help="also recall for every prompt (UserPromptSubmit)")
    st = sub.add_parser("status", parents=[common], help="what capture did and what each "
                        "namespace holds (JSON)")
    st.add_argument("--namespace", default=None)
    return {"hook": cmd_hook, "hooks": cmd_hooks, "status": cmd_status}


def argparse_hidden() -> str:
    return argparse.SUPPRESS


def _hook_settings(args):
    if getattr(args, "home", None):
        os.environ["TRIMEM_HOME"] = args.home
    s = load_settings(args.env_file)
    return s, HookSettings(home=s.home, namespace=args.namespace or s.hook_namespace,
                           start_tokens=s.hook_start_tokens,
                           prompt_recall=s.hook_prompt_recall or bool(getattr(args, "prompt_recall", False)),
                           prompt_tokens=s.hook_prompt_tokens,
                           prompt_timeout_s=s.hook_prompt_timeout_s, env_file=args.env_file,
                           config=s.to_config)


def cmd_hook(args) -> int:
    os.umask(0o077)
    if args.drain:
        return _drain(args)
    event = "hook"
    hs = None
    try:
        raw = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(raw) > MAX_INPUT_BYTES:
            raise ValueError(f"the hook input is over {MAX_INPUT_BYTES} bytes")
        inp = parse_input(raw.decode("utf-8", "replace"))
        event = inp.event
        _, hs = _hook_settings(args)
        out = handle(inp, hs, args.host)
        if out:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()
    except BaseException as exc:  # noqa: BLE001 - fail-open: the host must go on
        if isinstance(exc, KeyboardInterrupt):
            return 0
        msg = f"{type(exc).__name__}: {exc}"
        print(f"trimem hook ({event}): {msg}", file=sys.stderr)
        try:
            home = hs.home if hs is not None else _settings_home(args)
            CaptureState(home).record_error(event, msg)
        except Exception:  # noqa: BLE001 - stderr has it
            pass
    return 0


def _settings_home(args) -> str:
    return load_settings(args.env_file).home


def _drain(args) -> int:
    from ..capture.drain import Options, drain  # lazy: the tools layer, not in a hook
    from ..tools.runtime import Runtime  # lazy: the tools layer, not in a hook

    s, hs = _hook_settings(args)
    logging.basicConfig(stream=sys.stderr, level=s.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    opts = Options(linger_s=s.capture_linger_s, digest_tokens=max(hs.start_tokens, 1))
    return drain(lambda: Runtime(s.to_config()), CaptureState(hs.home), opts)


def cmd_hooks(args) -> int:
    try:
        done = (install(args.scope, prompt_recall=args.prompt_recall, env_file=args.env_file)
                if args.action == "install" else uninstall(args.scope))
    except (OSError, ValueError) as exc:
        print(f"trimem hooks {args.action}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(done, indent=2))
    return 0


def cmd_status(args) -> int:
    s = load_settings(args.env_file)

    out: dict = {"home": s.home, "embedder": choose_embedder(s.embedder).as_dict(),
                 "capture": capture_status(s.home, args.namespace)}
    if args.namespace is not None:
        from ..tools.namespaces import status  # lazy: the tools layer, not in a hook
        from ..tools.runtime import Runtime  # lazy: the tools layer, not in a hook

        rt = Runtime(s.to_config())
        rt.curation.stop(0)
        try:
            out["namespace"] = status(rt, args.namespace)
        except ToolFailure as exc:
            out["namespace"] = {"error": str(exc)}
        finally:
            rt.close(2.0)
    print(json.dumps(out, indent=2, ensure_ascii=False, default=str))
    return 0


def cmd_import_log(args) -> int:
    """``trimem import --from codex|gemini [PATH]`` (``capture/agentlog.py``): the report as
    JSON on stdout; exit 1 when PATH is missing or a log could not be read."""
    from ..capture.agentlog import (  # lazy: the tools layer, not in a hook
        default_path, find_logs, import_found)

    where = Path(args.path) if args.path else default_path(args.source)
    try:
        found = find_logs(args.source, where)
    except (OSError, ValueError) as exc:
        print(f"trimem import: {exc}", file=sys.stderr)
        return 1
    if not found.logs:
        report, code = import_found(None, "", args.source, where, found)
    else:
        with runtime(load(args), curate=args.curate) as rt, bar("import", "log", args.quiet) as b:
            report, code = import_found(rt, rt.config.home, args.source, where, found,
                                        args.namespace, progress=b)
            if args.curate:
                rt.curation.wait_idle()
    print(json.dumps(report, indent=2))   # ASCII: a file name may not be UTF-8
    return code
