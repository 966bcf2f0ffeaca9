"""``trimem export`` / ``trimem import`` (and the importers of other tools' files).

Progress goes to stderr as tqdm bars (off when stderr is not a terminal, or with ``--quiet``);
the report is printed to stdout as JSON.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path

from ..capture import AGENT_LOGS
from ..tools.errors import ToolFailure
from ..transfer import KINDS, read_file
from ..transfer.bounds import Bounds, Deadline, FileRefused, Refusals
from ..transfer.files import replacing
from .settings import load_settings


class _Bar:
    """A tqdm bar fed with (done, total, message) callbacks: the tools' progress shape."""

    def __init__(self, desc: str, unit: str, quiet: bool):
        from tqdm import tqdm  # lazy: tqdm, not in a hook

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


def load(args):
    """The settings of a command (``--env-file``, else ``settings.env`` in the home, under the
    ``TRIMEM_*`` environment: what ``serve`` reads) and its logging."""
    from .cli import _logging  # lazy: cycle with server.cli

    settings = load_settings(getattr(args, "env_file", None))
    _logging(settings.log_level)
    return settings


@contextmanager
def runtime(settings, curate: bool = False):
    """A Runtime for a one-shot command. Without ``curate`` the background curation is
    stopped first: sessions an import writes stay ``queued`` on disk and the next
    ``trimem serve`` curates them (resume at start-up)."""
    from ..tools.runtime import Runtime  # lazy: the tools layer, not in a hook

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


def _refuse(path: Path, message: str, refused=None, written: bool = False) -> int:
    """A file refused whole (or a write that stopped): the report, with the reason, on stdout;
    one line on stderr."""
    from ..transfer.importer import ImportReport  # lazy: the tools layer, not in a hook

    report = ImportReport(error=message, refused=refused.listed if refused else [])
    print(json.dumps(report.model_dump(), indent=2))
    return _fail("import", f"{path}: {message}" + (
        "; the sessions written before it are whole: import the file again to complete it"
        if written else " (nothing was imported)"))


def settle(rt) -> list[str]:
    """Intents an import left unsettled (``transfer/journal.py``), settled before anything else
    reads or writes: one note each."""
    from ..transfer.journal import Journal  # lazy: filelock (transfer.journal), not in a hook

    return Journal.of(rt).recover(rt)


def cmd_export(args) -> int:
    from ..transfer.export import export_records  # lazy: pydantic models (transfer.format), not in a hook
    from ..transfer.format import write_all  # lazy: pydantic models (transfer.format), not in a hook
    from ..transfer.markdown import write_markdown  # lazy: lancedb (storage.db), not in a hook

    try:
        with runtime(load(args)) as rt:
            notes = settle(rt)
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
                elif str(out) == "-":
                    header, records = export_records(rt, wanted, progress=b)
                    n = write_all(sys.stdout, header, records)
                    report = {"format": "jsonl", "namespaces": wanted, "records": n}
                else:
                    header, records = export_records(rt, wanted, progress=b)
                    with replacing(out) as fp:
                        n = write_all(fp, header, records)
                    report = {"format": "jsonl", "namespaces": wanted, "records": n}
            report["notes"] = notes
    except (OSError, ToolFailure, ValueError) as exc:
        kept = ("each file written before it is whole" if args.format == "markdown" else
                "the previous file, if any, is as it was" if args.path != "-" else "output cut")
        return _fail("export", f"{exc} ({kept})")
    if str(out) != "-":
        print(json.dumps(report, indent=2))
    return 0


def cmd_import(args) -> int:
    if args.source in AGENT_LOGS:   # another agent CLI's session logs: capture/agentlog.py
        from .capture_cli import cmd_import_log  # lazy: cycle with server.capture_cli

        return cmd_import_log(args)
    if args.path is None:
        return _fail("import", f"--from {args.source} needs a PATH")
    from ..tools import validate as v  # lazy: the tools layer, not in a hook
    from ..transfer.importer import import_records, report_text  # lazy: the tools layer, not in a hook

    path = Path(args.path)
    try:
        settings = load(args)
        ns = None if args.namespace is None else v.namespace(args.namespace, settings.to_config().limits)
    except (ToolFailure, ValueError) as exc:
        return _refuse(path, str(exc))
    bounds = Bounds(max_bytes=settings.import_max_bytes, timeout_s=settings.import_timeout_s)
    deadline, refused = Deadline(bounds.timeout_s), Refusals(limit=bounds.listed)
    try:
        records = read_file(args.source, path, ns, bounds, refused, deadline)
        with runtime(settings, curate=args.curate) as rt:
            notes = settle(rt)
            with bar("import", quiet=args.quiet) as b:
                report = import_records(rt, records, progress=b, strict=args.source == "trimem",
                                        refused=refused, deadline=deadline)
            report.notes = notes + report.notes
            if args.curate:
                with bar("curation", unit="session", quiet=args.quiet):
                    rt.curation.wait_idle()
    except FileRefused as exc:
        return _refuse(path, str(exc), refused)
    except (ToolFailure, ValueError, OSError) as exc:   # the store or the embedder failed
        return _refuse(path, f"stopped: {exc}", refused, written=True)
    print(report_text(report))
    if report.messages_refused or report.curated_refused:
        print(f"trimem import: {report.messages_refused} messages and {report.curated_refused} "
              "curated memories were refused (see \"refused\" in the report)", file=sys.stderr)
    return 0


def add_parsers(sub, common) -> dict:
    e = sub.add_parser("export", parents=[common], help="write namespaces to a file (the "
                       "versioned trimem-export JSONL, or a readable Markdown folder)")
    e.add_argument("path", help="the file to write (jsonl; '-' for stdout) or, for markdown, "
                   "a folder")
    e.add_argument("--namespace", action="append", help="one namespace (repeatable; default: all)")
    e.add_argument("--format", choices=["jsonl", "markdown"], default="jsonl")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    i = sub.add_parser("import", parents=[common], help="import a trimem export, another "
                       "tool's file, or an agent CLI's session logs (--from): re-importing adds "
                       "nothing")
    i.add_argument("path", nargs="?", help="the file; for --from codex/gemini a log or a "
                   "folder of logs (default: the CLI's own log folder)")
    i.add_argument("--from", dest="source", choices=[*KINDS, *AGENT_LOGS], default="trimem",
                   help="the file's kind (default: a trimem export)")
    i.add_argument("--namespace", help="the namespace to import into (default: 'default' for "
                   "--from files; one per project for agent logs; a trimem export's own, which "
                   "--namespace replaces for a file of one namespace)")
    i.add_argument("--curate", action="store_true", help="curate the imported sessions now "
                   "(default: the next `trimem serve` does it in the background)")
    i.add_argument("--quiet", action="store_true", help="no progress bar")
    return {"export": cmd_export, "import": cmd_import}
