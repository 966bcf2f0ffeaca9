"""The ``trimem`` command: ``serve`` (for hosts), ``demo``, and a few upkeep commands."""

from __future__ import annotations

import argparse
import logging
import sys
import asyncio
import json
import os
import signal

from .. import __version__
from ..storage import open_store
from ..storage.private import private_umask
from ..tools.errors import ToolFailure
from .capture_cli import add_parsers as add_capture
from .settings import SettingsError, load_settings
from .transfer_cli import add_parsers, bar
from .view import add_parser as add_view


def _logging(level: str) -> None:
    # Over stdio, stdout is the protocol: every log line goes to stderr.
    logging.basicConfig(stream=sys.stderr, level=level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def cmd_serve(args) -> int:
    for sig in (signal.SIGINT, signal.SIGTERM):    # until server/lifecycle.py installs its own
        signal.signal(sig, lambda *_: os._exit(0))  # handlers nothing is open: just go
    from .app import build_server  # lazy: MCP SDK, not in a hook
    from .lifecycle import serve  # lazy: MCP SDK, not in a hook

    settings = load_settings(args.env_file)
    _logging(settings.log_level)
    server = build_server(settings)
    # stdin EOF, SIGTERM or one Ctrl-C: background work stops (bounded) and the process exits
    # with status 0 within 2 s (server/lifecycle.py)
    return serve(server, settings, args.http, args.host, args.port)


def cmd_demo(args) -> int:
    from .demo import run_demo  # lazy: MCP SDK, not in a hook

    _logging("WARNING")
    return asyncio.run(run_demo(keep=args.keep))


def cmd_namespaces(args) -> int:
    for name in open_store(load_settings(args.env_file).home).namespaces():
        print(name)
    return 0


def cmd_consolidate(args) -> int:
    from ..tools.consolidate import consolidate  # lazy: the tools layer, not in a hook
    from .app import build_server  # lazy: MCP SDK, not in a hook

    settings = load_settings(args.env_file)
    _logging(settings.log_level)
    rt = build_server(settings).runtime

    with bar("consolidate", unit="step") as shown:
        async def progress(done, total, message):
            shown(done, total, message)

        out = asyncio.run(consolidate(rt, args.namespace, args.dry_run, args.min_cluster_size,
                                      progress=progress))
    print(json.dumps(out.model_dump(mode="json"), indent=2))
    return 0


def cmd_restore(args) -> int:
    """Make a merged or superseded hybrid memory active again; print what changed as JSON."""
    from ..tools.runtime import Runtime  # lazy: the tools layer, not in a hook

    settings = load_settings(args.env_file)
    _logging(settings.log_level)
    rt = Runtime(settings.to_config())
    rt.curation.stop(0)   # a one-shot command: queued sessions stay queued for the server
    from ..tools.consolidate import restore  # lazy: the tools layer, not in a hook

    try:
        out = restore(rt, args.namespace, args.memory_id)
    except ToolFailure as exc:
        print(f"trimem restore: {exc}", file=sys.stderr)
        return 1
    finally:
        rt.close()
    print(json.dumps(out, indent=2, default=str))
    return 0


def main(argv: list[str] | None = None) -> int:
    private_umask()   # memory, locks, logs and tokens any command writes: the user's alone

    ap = argparse.ArgumentParser(prog="trimem", description="Local-first long-term memory for "
                                 "LLM agents, over MCP. Settings: TRIMEM_* environment variables.")
    ap.add_argument("--version", action="version", version=f"trimem {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    # settings: TRIMEM_* variables over one file (never a .env in the working directory)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--env-file", default=None, metavar="PATH",
                        help="read settings from this file (default: TRIMEM_ENV_FILE, else "
                        "settings.env in TRIMEM_HOME if present)")
    sv = sub.add_parser("serve", parents=[common],
                        help="run the MCP server over stdio (what hosts start)")
    sv.add_argument("--http", action="store_true",
                    help="serve streamable HTTP instead (bearer token required; the URL is "
                         "printed to stderr)")
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8765)
    d = sub.add_parser("demo", help="remember a short conversation and recall from it")
    d.add_argument("--keep", action="store_true",
                   help="use TRIMEM_HOME instead of a throw-away folder")
    sub.add_parser("namespaces", parents=[common], help="list the namespaces in TRIMEM_HOME")
    c = sub.add_parser("consolidate", parents=[common], help="consolidate one namespace now")
    c.add_argument("--namespace", default="default")
    c.add_argument("--dry-run", action="store_true")
    c.add_argument("--min-cluster-size", type=int, default=10)
    r = sub.add_parser("restore", parents=[common], help="make a memory that consolidation "
                       "merged or superseded active again (prints what changed as JSON)")
    r.add_argument("memory_id", help="the id of the merged or superseded episode or fact")
    r.add_argument("--namespace", default="default")

    more = add_parsers(sub, common) | add_view(sub, common) | add_capture(sub, common)
    args = ap.parse_args(argv)
    handler = {"serve": cmd_serve, "demo": cmd_demo, "namespaces": cmd_namespaces,
               "consolidate": cmd_consolidate, "restore": cmd_restore, **more}[args.cmd]

    # what any command writes (memory, exports, logs, tokens) is its user's alone
    umask = os.umask(0o077)
    try:
        return handler(args)
    except SettingsError as exc:
        print(f"trimem {args.cmd}: {exc}", file=sys.stderr)
        return 2
    finally:
        os.umask(umask)


if __name__ == "__main__":
    sys.exit(main())
