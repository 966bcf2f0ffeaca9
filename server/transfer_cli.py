"""``trimem export`` / ``trimem import`` (and the importers of other tools' files).

Progress goes to stderr as tqdm bars (off when stderr is not a terminal, or with ``--quiet``);
the report is printed to stdout as JSON.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path


class _Bar:
    """A tqdm bar fed with (done, total, message) callbacks: the tools' progress shape."""

    def __init__(self, desc: str, unit: str, quiet: bool):
        from tqdm import tqdm

        self.bar = tqdm(desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True,
                        disable=quiet or None, leave=False)

    def __call__(self, done, total, message=None) -> None:
        if total and self.bar.total != total:
            self.bar.total = total
        self.bar.n = done
        if message:
            self.bar.set_postfix_str(str(message)[:40], refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


@contextmanager
def bar(desc: str, unit: str = "msg", quiet: bool = False):
    b = _Bar(desc, unit, quiet)
    try:
        yield b
    finally:
        b.close()


@contextmanager
def runtime(curate: bool = False):
    """A Runtime for a one-shot command. Without ``curate`` the background curation is
    stopped first: sessions an import writes stay ``queued`` on disk and the next
    ``trimem serve`` curates them (resume at start-up)."""
    from ..tools.runtime import Runtime
    from .cli import _logging
    from .settings import Settings

    settings = Settings()
    _logging(settings.log_level)
    rt = Runtime(settings.to_config())
    if not curate:
        rt.curation.stop(0)
    try:
        yield rt
    finally:
        rt.close()


def _fail(cmd: str, message: str) -> int:
    print(f"trimem {cmd}: {message}", file=sys.stderr)
    return 1


def cmd_export(args) -> int:
    from ..transfer.export import export_records
    from ..transfer.format import write_all
    from ..transfer.markdown import write_markdown

    with runtime() as rt:
        known = rt.store.namespaces()
        wanted = args.namespace or known
        missing = [n for n in wanted if n not in known]
        if missing:
            return _fail("export", f"no namespace {missing[0]!r} (known: {known})")
        out = Path(args.path)
        with bar("export", quiet=args.quiet) as b:
            if args.format == "markdown":
                files = write_markdown(rt, wanted, out, progress=b)
                report = {"format": "markdown", "files": [str(f) for f in files]}
            else:
                header, records = export_records(rt, wanted, progress=b)
                with (sys.stdout if str(out) == "-" else open(out, "w", encoding="utf-8")) as fp:
                    n = write_all(fp, header, records)
                report = {"format": "jsonl", "namespaces": wanted, "records": n}
    if str(out) != "-":
        print(json.dumps(report, indent=2))
    return 0


def cmd_import(args) -> int:
    from ..capture import AGENT_LOGS

    if args.source in AGENT_LOGS:   # another agent CLI's session logs: capture/agentlog.py
        from .capture_cli import cmd_import_log

        return cmd_import_log(args)
    if args.path is None:
        return _fail("import", f"--from {args.source} needs a PATH")
    from ..transfer.foreign import read_foreign
    from ..transfer.format import FormatError, read_all
    from ..transfer.importer import ImportError_, import_records

    path = Path(args.path)
    try:
        if args.source == "trimem":
            with open(path, encoding="utf-8") as fp:
                _, records = read_all(fp)
        else:
            records = read_foreign(args.source, path, args.namespace or "default")
    except OSError as exc:
        return _fail("import", f"cannot read {path}: {exc}")
    except (FormatError, ValueError) as exc:
        return _fail("import", f"{path}: {exc} (nothing was imported)")
    with runtime(curate=args.curate) as rt:
        try:
            with bar("import", quiet=args.quiet) as b:
                report = import_records(rt, records, progress=b)
        except ImportError_ as exc:
            return _fail("import", f"{path}: {exc} (nothing was imported)")
        if args.curate:
            with bar("curation", unit="session", quiet=args.quiet):
                rt.curation.wait_idle()
    print(json.dumps(report.model_dump(), indent=2, ensure_ascii=False))
    return 0


def add_parsers(sub) -> dict:
    from ..capture import AGENT_LOGS
    from ..transfer import FOREIGN

    e = sub.add_parser("export", help="write namespaces to a file (the versioned trimem-export "
                       "JSONL, or a readable Markdown folder)")
    e.add_argument("path", help="the file to write (jsonl; '-' for stdout) or, for markdown, "
                   "a folder")
    e.add_argument("--namespace", action="append", help="one namespace (repeatable; default: all)")
    e.add_argument("--format", choices=["jsonl", "markdown"], default="jsonl")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    i = sub.add_parser("import", help="import a trimem export, another tool's file, or an "
                       "agent CLI's session logs (--from): re-importing adds nothing")
    i.add_argument("path", nargs="?", help="the file; for --from codex/gemini a log or a "
                   "folder of logs (default: the CLI's own log folder)")
    i.add_argument("--from", dest="source", choices=["trimem", *FOREIGN, *AGENT_LOGS],
                   default="trimem", help="the file's kind (default: a trimem export)")
    i.add_argument("--namespace", help="for --from files: the namespace to import into "
                   "(default: 'default'; for agent logs, one per project)")
    i.add_argument("--curate", action="store_true", help="curate the imported sessions now "
                   "(default: the next `trimem serve` does it in the background)")
    i.add_argument("--quiet", action="store_true", help="no progress bar")
    return {"export": cmd_export, "import": cmd_import}
