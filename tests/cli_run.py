"""Helpers of the transfer tests: the ``trimem`` command run in this process (the real
argument parsing, settings, store and embedder), with a watchdog: a command still running after
its bound fails the test instead of hanging the suite, and an exception escaping the command
fails it too (a user would see a traceback)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path


from trimem.server.cli import main


@dataclass
class Ran:
    rc: int
    report: dict | None     # the JSON printed on stdout, if any
    err: str


class Trimem:
    def __init__(self, home: Path, capsys):
        self.home = home
        self.capsys = capsys

    def __call__(self, *argv: str, timeout: float = 60.0) -> Ran:
        self.capsys.readouterr()
        box: dict = {}

        def go() -> None:
            try:
                box["rc"] = main(list(argv))
            except BaseException as exc:  # noqa: BLE001 - reported below, as a user would see it
                box["exc"] = exc

        t = threading.Thread(target=go, daemon=True)
        t.start()
        t.join(timeout)
        assert not t.is_alive(), f"trimem {' '.join(argv[:3])} still running after {timeout} s"
        out = self.capsys.readouterr()
        if "exc" in box:
            raise AssertionError(f"trimem {argv[0]} raised {box['exc']!r}: {out.err}") from box["exc"]
        text = out.out.strip()
        return Ran(box["rc"], json.loads(text) if text.startswith("{") else None, out.err)

    def ok(self, *argv: str, timeout: float = 60.0) -> dict:
        ran = self(*argv, timeout=timeout)
        assert ran.rc == 0, ran.err
        assert ran.report is not None, ran.err
        return ran.report


def write_json(path: Path, data, lines: bool = False) -> Path:
    text = "\n".join(json.dumps(x) for x in data) if lines else json.dumps(data)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def open_home(home: Path):
    from trimem.server.settings import Settings
    from trimem.tools.runtime import Runtime

    return Runtime(Settings(home=str(home), curation=False).to_config())


def contents(home: Path, ns: str = "default") -> dict:
    """What a namespace holds: sources (session, ref, speaker, text), host memories, sessions."""
    if not home.exists():
        return {"sources": [], "curated": [], "sessions": [], "forgets": 0}
    rt = open_home(home)
    try:
        if ns not in rt.store.namespaces():
            return {"sources": [], "curated": [], "sessions": [], "forgets": 0}
        sp = rt.space(ns)
        src = sorted((r.session_id, r.seq, r.ref, r.speaker, r.text, r.id)
                     for r in sp.sources.all())
        mems = sorted((m.id, m.text) for k in ("episode", "fact")
                      for m in sp.memories.of_kind(k, None) if m.origin == "host")
        sess = sorted(s.session_id for s in sp.sessions.all())
        forgets = len(sp.derived.rows("audit", eq={"op": "forget"}, columns=["target_ids"]))
        return {"sources": src, "curated": mems, "sessions": sess, "forgets": forgets}
    finally:
        rt.close()
