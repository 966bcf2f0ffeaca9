"""Importers of other tools' files, on fixtures that follow the published formats: what each
creates (sessions, speakers, times, refs, curated facts), and that re-importing adds nothing."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from trimem.server.cli import main
from trimem.server.settings import Settings

FIX = Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def cli(tmp_path, tmp_path_factory, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("TRIMEM_HOME", str(home))
    monkeypatch.setenv("TRIMEM_CURATION", "false")

    def run(*argv):
        capsys.readouterr()
        rc = main(list(argv))
        out = capsys.readouterr()
        assert rc == 0, out.err
        return json.loads(out.out)
    run.settings = Settings(home=str(home), curation=False)
    return run


def stored(settings, ns):
    from trimem.tools.runtime import Runtime

    rt = Runtime(settings.to_config())
    try:
        sp = rt.space(ns)
        src = sorted(sp.sources.all(), key=lambda r: (r.session_id, r.seq))
        mems = [m for k in ("fact", "episode") for m in sp.memories.of_kind(k, None)]
        sessions = {s.session_id: s.session_time for s in sp.sessions.all()}
        return src, mems, sessions
    finally:
        rt.close()


def utc(*a):
    return datetime(*a, tzinfo=timezone.utc)


def test_memory_json(cli):
    rep = cli("import", "--from", "memory-json", "--namespace", "kg", "--quiet",
              str(FIX / "memory.json"))
    assert rep["sessions"] == 2 and rep["messages_stored"] == 3 and rep["curated_stored"] == 2
    src, mems, sessions = stored(cli.settings, "kg")
    assert set(sessions) == {"entity:Ana_Silva", "entity:Central_Hospital"}
    assert [(r.speaker, r.ref, r.text) for r in src][:2] == [
        ("Ana_Silva", "entity:Ana_Silva#0", "Works as a nurse at the Central Hospital"),
        ("Ana_Silva", "entity:Ana_Silva#1", "Prefers tea over coffee")]
    assert src[0].metadata == {"entityType": "person"}
    facts = sorted((m.body["subject"], m.body["relation"], m.body["object"],
                    tuple(m.refs or [])) for m in mems)
    assert facts == [("Ana_Silva", "volunteers_for", "Project_Kite", ("entity:Ana_Silva#0",)),
                     ("Ana_Silva", "works_at", "Central_Hospital",
                      ("entity:Ana_Silva#0", "entity:Central_Hospital#0"))]
    assert all(m.origin == "host" for m in mems)
    again = cli("import", "--from", "memory-json", "--namespace", "kg", "--quiet",
                str(FIX / "memory.json"))
    assert again["messages_stored"] == 0 and again["curated_stored"] == 0
    assert again["curated_already_stored"] == 2


def test_chatgpt_conversations(cli):
    rep = cli("import", "--from", "chatgpt", "--quiet", str(FIX / "chatgpt_conversations.json"))
    assert rep["sessions"] == 1 and rep["messages_stored"] == 4   # system, empty, other branch out
    src, _, sessions = stored(cli.settings, "default")
    sid = "chatgpt:c0ffee00-0000-4000-8000-000000000001"
    assert sessions == {sid: datetime.fromtimestamp(1714000000.0, tz=timezone.utc)}
    assert [(r.speaker, r.ref) for r in src] == [
        ("user", "n1"), ("assistant", "n2"), ("user", "n3"), ("assistant", "n4")]
    assert src[0].timestamp == datetime.fromtimestamp(1714000010.0, tz=timezone.utc)
    assert "regenerated" not in " ".join(r.text for r in src)
    assert src[0].metadata == {"title": "Sourdough starter"}
    again = cli("import", "--from", "chatgpt", "--quiet", str(FIX / "chatgpt_conversations.json"))
    assert again["messages_stored"] == 0 and again["messages_already_stored"] == 4


def test_claude_export(cli):
    rep = cli("import", "--from", "claude", "--namespace", "claude", "--quiet",
              str(FIX / "claude_conversations.json"))
    assert rep["sessions"] == 1 and rep["messages_stored"] == 2   # the empty message is left out
    src, _, sessions = stored(cli.settings, "claude")
    assert sessions == {"claude:5b2a7c1e-0000-4000-8000-00000000000a": utc(2024, 6, 2, 9, 15)}
    assert [(r.speaker, r.ref, r.timestamp) for r in src] == [
        ("user", "m-1", utc(2024, 6, 2, 9, 15, 10)), ("assistant", "m-2", utc(2024, 6, 2, 9, 15, 20))]


def test_a_file_of_the_wrong_kind_is_refused(cli, tmp_path, capsys):
    for kind in ("memory-json", "chatgpt", "claude"):
        other = FIX / ("memory.json" if kind != "memory-json" else "claude_conversations.json")
        capsys.readouterr()
        assert main(["import", "--from", kind, "--quiet", str(other)]) == 1
        assert "nothing was imported" in capsys.readouterr().err
    assert not (tmp_path / "home").exists() or stored(cli.settings, "default")[0] == []
