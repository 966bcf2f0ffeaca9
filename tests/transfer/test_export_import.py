"""export -> import: everything a user owns round-trips into a fresh home, re-importing adds
nothing, forgotten stays forgotten, and a bad file writes nothing."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from helpers import payload
from trimem.server.app import build_server
from trimem.server.cli import main
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio

S1 = [{"content": "I moved to Lisbon last week.", "speaker": "Ana", "ref": "m1",
       "timestamp": "2024-05-08T10:00:00Z", "metadata": {"channel": "sms", "n": [1, 2]}},
      {"content": "Lisbon! How is the flat?", "speaker": "Ben", "ref": "m2"},
      {"content": "no ref on this one", "speaker": "Ana"}]
S2 = [{"content": "My cat Miso hates the new stairs.", "speaker": "Ana", "ref": "m3"},
      {"content": "Delete me: my bank PIN is 4421", "speaker": "Ana", "ref": "secret"}]
CURATED = {"episodes": [{"title": "Ana's move", "summary": "Ana moved to Lisbon.",
                         "refs": ["m1", "m2"]}],
           "facts": [{"subject": "Ana", "relation": "lives in", "object": "Lisbon",
                      "context": "moved last week", "refs": ["m1"]}]}


def env(monkeypatch, home):
    monkeypatch.setenv("TRIMEM_HOME", str(home))
    monkeypatch.setenv("TRIMEM_CURATION", "false")


async def fill(home, forget: bool = True) -> None:
    server = build_server(Settings(home=str(home), curation=False))
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"messages": S1, "session_id": "s1",
                                               "session_time": "2024-05-08T09:00:00Z",
                                               "namespace": "work", "curated": CURATED}))
        payload(await c.call_tool("remember", {"messages": S2, "session_id": "s2",
                                               "session_time": "2024-05-09T09:00:00Z",
                                               "namespace": "work"}))
        payload(await c.call_tool("remember", {"messages": [{"content": "other ns"}],
                                               "namespace": "home"}))
        if forget:
            payload(await c.call_tool("forget", {"refs": ["secret"], "namespace": "work"}))
    server.runtime.close()


def snapshot(home, ns="work") -> dict:
    from trimem.tools.runtime import Runtime

    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    try:
        sp = rt.space(ns)
        src = sorted((r.session_id, r.seq, r.ref, r.speaker, r.timestamp, r.text,
                      json.dumps(r.metadata, sort_keys=True)) for r in sp.sources.all())
        mems = sorted((m.id, m.kind, m.text, tuple(m.refs or []), m.timestamp,
                       json.dumps(m.body, sort_keys=True))
                      for k in ("episode", "fact") for m in sp.memories.of_kind(k, None)
                      if m.origin == "host")
        sess = sorted((s.session_id, s.session_time) for s in sp.sessions.all())
        return {"sources": src, "curated": mems, "sessions": sess,
                "namespaces": sorted(rt.store.namespaces())}
    finally:
        rt.close()


def run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


async def test_round_trip_into_a_fresh_home(tmp_path, monkeypatch, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    await fill(a)
    env(monkeypatch, a)
    dump = tmp_path / "all.jsonl"
    assert run(capsys, "export", str(dump), "--quiet")[0] == 0
    lines = [json.loads(x) for x in dump.read_text().splitlines()]
    assert lines[0]["format"] == "trimem-export" and lines[0]["version"] == 2
    assert {x["type"] for x in lines[1:-1]} == {"session", "message", "curated", "forget"}
    assert lines[-1] == {"type": "end", "records": len(lines) - 2}
    assert "4421" not in dump.read_text()            # the forgotten text is not exported

    env(monkeypatch, b)
    rc, out, _ = run(capsys, "import", str(dump), "--quiet")
    assert rc == 0, out
    report = json.loads(out)
    assert report["messages_stored"] == 5 and report["curated_stored"] == 2
    assert report["forget_records_added"] == 1
    assert snapshot(b) == snapshot(a)
    assert snapshot(b, "home")["sources"] == snapshot(a, "home")["sources"]

    rc, out, _ = run(capsys, "import", str(dump), "--quiet")   # again: nothing new
    again = json.loads(out)
    assert again["messages_stored"] == 0 and again["messages_already_stored"] == 5
    assert again["curated_stored"] == 0 and again["forget_records_added"] == 0
    assert snapshot(b) == snapshot(a)


async def test_forgotten_stays_forgotten(tmp_path, monkeypatch, capsys):
    a = tmp_path / "a"
    await fill(a, forget=False)
    env(monkeypatch, a)
    old = tmp_path / "before-forget.jsonl"
    assert run(capsys, "export", str(old), "--quiet")[0] == 0
    assert "4421" in old.read_text()
    server = build_server(Settings(home=str(a), curation=False))
    async with Client(server) as c:
        payload(await c.call_tool("forget", {"refs": ["secret"], "namespace": "work"}))
    server.runtime.close()
    rc, out, _ = run(capsys, "import", str(old), "--quiet")    # the same home
    assert rc == 0 and json.loads(out)["messages_forgotten"] == 1
    assert not any("4421" in s[5] for s in snapshot(a)["sources"])

    new = tmp_path / "after-forget.jsonl"           # a fresh home gets the forget record first
    assert run(capsys, "export", str(new), "--quiet")[0] == 0
    b = tmp_path / "b"
    env(monkeypatch, b)
    assert run(capsys, "import", str(new), "--quiet")[0] == 0
    rc, out, _ = run(capsys, "import", str(old), "--quiet")    # then the old file
    assert rc == 0 and json.loads(out)["messages_forgotten"] == 1
    assert not any("4421" in s[5] for s in snapshot(b)["sources"])


async def test_a_bad_line_anywhere_writes_nothing(tmp_path, monkeypatch, capsys):
    a = tmp_path / "a"
    await fill(a)
    env(monkeypatch, a)
    dump = tmp_path / "all.jsonl"
    run(capsys, "export", str(dump), "--quiet")
    good = dump.read_text().splitlines()
    b = tmp_path / "b"
    env(monkeypatch, b)
    cases = {
        "not JSON": good + ["{oops"],
        "type": good + ['{"type": "message", "namespace": "work", "session_id": "s9"}'],
        "empty": good + ['{"type": "message", "namespace": "work", "session_id": "s9", '
                         '"content": "   "}'],
        "refs": good + ['{"type": "curated", "namespace": "work", "session_id": "s9", '
                        '"kind": "fact", "subject": "a", "relation": "b", "object": "c", '
                        '"refs": ["nowhere"]}'],
        "header": good[1:],
    }
    for what, lines in cases.items():
        bad = tmp_path / f"bad-{what}.jsonl"
        bad.write_text("\n".join(lines) + "\n")
        rc, _, err = run(capsys, "import", str(bad), "--quiet")
        assert rc == 1 and "nothing was imported" in err, (what, err)
        assert not b.exists() or snapshot(b)["namespaces"] == [], what


async def test_markdown_rendering_escapes_stored_strings(tmp_path, monkeypatch, capsys):
    a = tmp_path / "a"
    server = build_server(Settings(home=str(a), curation=False))
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"messages": [
            {"content": "# Not a heading\n- not a list\n<script>x</script> [link](http://e.vil)",
             "speaker": "**Eve** ## injected", "ref": "r`1"}], "session_id": "s # x",
            "session_time": "2024-01-02T03:04:05Z", "namespace": "n"}))
    server.runtime.close()
    env(monkeypatch, a)
    rc, out, _ = run(capsys, "export", str(tmp_path / "md"), "--format", "markdown", "--quiet")
    assert rc == 0
    md = (tmp_path / "md" / json.loads(out)["files"][0].split("/md/")[1]).read_text()
    headings = [ln for ln in md.splitlines() if ln.startswith("#")]
    assert headings == ["# Namespace n", "## 2024-01-02 03:04 · session s \\# x"]
    assert "<script>" not in md and "](http" not in md and "\n- not" not in md
    assert "> \\# Not a heading" in md and "\\*\\*Eve\\*\\*" in md
