"""What an import writes: a trimem export that passes the plan is written whole (each session in
one write, whatever its size); forget records are checked like any record and win over every
later import of what they name (with or without a ref, message or curated memory);
``--namespace`` moves a one-namespace export; a truncated export is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from cli_run import contents, write_json
from helpers import payload
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio
FIX = Path(__file__).parent.parent / "fixtures"
HEADER = {"format": "trimem-export", "version": 1}


def rec(rtype: str, **fields) -> dict:
    return {"type": rtype, "namespace": "work", **fields}


def msg(sid: str, k: int, text: str, ref: str | None = None) -> dict:
    out = rec("message", session_id=sid, seq=k, content=text, speaker="Ana")
    return out | ({"ref": ref} if ref else {})


async def fill(home: Path, ns: str = "work", **extra) -> dict:
    server = build_server(Settings(home=str(home), curation=False, **extra))
    try:
        async with Client(server) as c:
            return payload(await c.call_tool("remember", {
                "messages": [{"content": "no ref on this one", "speaker": "Ana"},
                             {"content": "Ana moved to Lisbon.", "speaker": "Ana", "ref": "r1"}],
                "session_id": "s1", "namespace": ns,
                "curated": {"facts": [{"subject": "Ana", "relation": "lives in",
                                       "object": "Lisbon", "refs": ["r1"]}]}}))
    finally:
        server.runtime.close()


async def filled_export(trimem, tmp_path, monkeypatch):
    """A home ``a`` filled by :func:`fill` and its export (TRIMEM_HOME left at ``a``)."""
    a = tmp_path / "a"
    await fill(a)
    monkeypatch.setenv("TRIMEM_HOME", str(a))
    dump = tmp_path / "a.jsonl"
    trimem.ok("export", "--quiet", str(dump))
    return a, dump


async def forget(home: Path, ns: str = "work", **what) -> dict:
    server = build_server(Settings(home=str(home), curation=False))
    try:
        async with Client(server) as c:
            return payload(await c.call_tool("forget", {"namespace": ns, **what}))
    finally:
        server.runtime.close()


async def test_more_curated_memories_than_one_call_takes_import_whole(trimem, tmp_path):
    facts = [rec("curated", session_id="s2", kind="fact", subject=f"p{i}", relation="knows",
                 object=f"q{i}", refs=["m1"]) for i in range(2_001)]
    f = write_json(tmp_path / "many.jsonl", [HEADER, rec("session", session_id="s1"),
                                             msg("s1", 0, "the message of s1", "m0"),
                                             rec("session", session_id="s2"),
                                             msg("s2", 0, "the message of s2", "m1"), *facts],
                   lines=True)
    rep = trimem.ok("import", "--quiet", str(f), timeout=180)
    assert rep["messages_stored"] == 2 and rep["curated_stored"] == 2_001
    assert len(contents(trimem.home, "work")["curated"]) == 2_001


async def test_a_session_that_grew_over_two_calls_imports_again(trimem, tmp_path, monkeypatch):
    monkeypatch.setenv("TRIMEM_MAX_CALL_CHARS", "1000")
    a = tmp_path / "a"
    server = build_server(Settings(home=str(a), curation=False, max_call_chars=1000))
    async with Client(server) as c:
        for part in range(2):
            payload(await c.call_tool("remember", {"session_id": "s1", "namespace": "work",
                                                   "messages": [{"content": f"{part}{k} " * 100,
                                                                 "ref": f"{part}-{k}"}
                                                                for k in range(3)]}))
    server.runtime.close()
    monkeypatch.setenv("TRIMEM_HOME", str(a))
    dump = tmp_path / "grown.jsonl"
    trimem.ok("export", "--quiet", str(dump))
    monkeypatch.setenv("TRIMEM_HOME", str(trimem.home))
    rep = trimem.ok("import", "--quiet", str(dump))
    assert rep["messages_stored"] == 6 and rep["sessions"] == 1


async def test_forget_records_are_checked_like_any_record(trimem, tmp_path):
    good = [HEADER, rec("session", session_id="s1"), msg("s1", 0, "kept", "m0")]
    for bad_id in ["\ud800", "x" * 100_000, "a\nb"]:
        f = write_json(tmp_path / "bad.jsonl", [*good, rec("forget", ids=[bad_id])], lines=True)
        ran = trimem("import", "--quiet", str(f))
        assert ran.rc == 1 and "nothing was imported" in ran.err, ran.err
        assert "forget" in ran.report["error"]
        assert contents(trimem.home, "work")["sources"] == []
    f = write_json(tmp_path / "bad-ref.jsonl", [*good, rec("forget", refs=["r" * 600])], lines=True)
    assert trimem("import", "--quiet", str(f)).rc == 1


async def test_a_forgotten_message_without_a_ref_is_not_imported_again(trimem, tmp_path,
                                                                       monkeypatch):
    a, dump = await filled_export(trimem, tmp_path, monkeypatch)
    monkeypatch.setenv("TRIMEM_HOME", str(trimem.home))
    trimem.ok("import", "--quiet", str(dump))
    plain = [s for s in contents(trimem.home, "work")["sources"] if s[2] is None]
    assert [s[5] for s in plain] == [s[5] for s in contents(a, "work")["sources"] if s[2] is None]
    await forget(trimem.home, ids=[plain[0][5]])
    rep = trimem.ok("import", "--quiet", str(dump))
    assert rep["messages_forgotten"] == 1 and rep["messages_stored"] == 0
    assert [s[4] for s in contents(trimem.home, "work")["sources"]] == ["Ana moved to Lisbon."]


async def test_a_forgotten_curated_memory_is_not_imported_again(trimem, tmp_path, monkeypatch):
    a, dump = await filled_export(trimem, tmp_path, monkeypatch)
    monkeypatch.setenv("TRIMEM_HOME", str(trimem.home))
    trimem.ok("import", "--quiet", str(dump))
    (fact,) = contents(trimem.home, "work")["curated"]
    await forget(trimem.home, ids=[fact[0]])
    rep = trimem.ok("import", "--quiet", str(dump))
    assert rep["curated_stored"] == 0 and rep["curated_forgotten"] == 1
    assert contents(trimem.home, "work")["curated"] == []
    # a fresh home that gets the forget record first (a newer export) keeps it out too
    newer = tmp_path / "b.jsonl"
    trimem.ok("export", "--quiet", str(newer))
    monkeypatch.setenv("TRIMEM_HOME", str(tmp_path / "c"))
    trimem.ok("import", "--quiet", str(newer))
    rep = trimem.ok("import", "--quiet", str(dump))
    assert rep["curated_forgotten"] == 1 and contents(tmp_path / "c", "work")["curated"] == []


async def test_namespace_moves_a_trimem_export(trimem, tmp_path, monkeypatch):
    a, dump = await filled_export(trimem, tmp_path, monkeypatch)
    await forget(a, refs=["r1"])
    after = tmp_path / "after.jsonl"
    trimem.ok("export", "--quiet", str(after))
    monkeypatch.setenv("TRIMEM_HOME", str(trimem.home))
    rep = trimem.ok("import", "--namespace", "moved", "--quiet", str(after))
    assert rep["namespaces"] == ["moved"] and rep["forget_records_added"] == 1
    rep = trimem.ok("import", "--namespace", "moved", "--quiet", str(dump))
    assert rep["messages_forgotten"] == 1 and rep["curated_skipped"] == 1
    assert [s[4] for s in contents(trimem.home, "moved")["sources"]] == ["no ref on this one"]
    assert contents(trimem.home, "work")["sources"] == []
    await fill(a, ns="other")
    monkeypatch.setenv("TRIMEM_HOME", str(a))
    both = tmp_path / "both.jsonl"
    trimem.ok("export", "--quiet", str(both))
    monkeypatch.setenv("TRIMEM_HOME", str(trimem.home))
    ran = trimem("import", "--namespace", "x", "--quiet", str(both))
    assert ran.rc == 1 and "2 namespaces" in ran.report["error"]


async def test_a_truncated_export_is_refused(trimem, tmp_path, monkeypatch):
    a, dump = await filled_export(trimem, tmp_path, monkeypatch)
    lines = dump.read_text().splitlines(keepends=True)
    monkeypatch.setenv("TRIMEM_HOME", str(trimem.home))
    for keep in (len(lines) - 1, 2):
        cut = tmp_path / f"cut{keep}.jsonl"
        cut.write_text("".join(lines[:keep]))
        ran = trimem("import", "--quiet", str(cut))
        assert ran.rc == 1 and "truncated" in ran.report["error"], ran.err
    assert contents(trimem.home, "work")["sources"] == []


@pytest.mark.slow
def test_concurrent_imports_store_each_curated_memory_once(tmp_path):
    env = dict(os.environ, TRIMEM_HOME=str(tmp_path / "home"), TRIMEM_CURATION="false")
    exe = os.path.join(os.path.dirname(sys.executable), "trimem")
    for _ in range(2):
        runs = [subprocess.Popen([exe, "import", "--from", "memory-json", "--quiet",
                                  str(FIX / "memory.json")], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(3)]
        for p in runs:
            out, err = p.communicate(timeout=180)
            assert p.returncode == 0 and "Traceback" not in err, err
            json.loads(out)
    got = contents(tmp_path / "home")
    assert len(got["curated"]) == 2 and len({c[0] for c in got["curated"]}) == 2
    assert len(got["sources"]) == 3


def test_a_forget_record_binds_the_next_import_in_the_same_process(tmp_path):
    """One process (a program using trimem as a library) imports a newer export, then an older
    one: the forget record it has just written is read back at once, not from a stale copy."""
    from cli_run import open_home
    from trimem.transfer.format import read_all
    from trimem.transfer.importer import import_records

    def records(*lines):
        return read_all([json.dumps(x) for x in [HEADER, *lines]])[1]

    old = records(rec("session", session_id="s1"), msg("s1", 0, "my PIN is 4421", "secret"))
    from trimem.strategies.ids import stable_id

    gone = stable_id("src", "work", "s1", "secret")
    newer = records(rec("session", session_id="s1"), msg("s1", 0, "kept", "m0"),
                    rec("forget", ids=[gone], refs=["secret"]))
    rt = open_home(tmp_path / "home")
    try:
        assert import_records(rt, newer).forget_records_added == 1
        rep = import_records(rt, old)
        assert rep.messages_forgotten == 1 and rep.messages_stored == 0
    finally:
        rt.close()


async def test_an_id_another_session_holds_is_not_taken(trimem, tmp_path):
    """A message without a ref keeps the id of its export, unless (a file that lies) that id
    names another session's message here: then it gets its own."""
    first = write_json(tmp_path / "a.jsonl", [HEADER, rec("session", session_id="s1"),
                                              msg("s1", 0, "the first") | {"id": "src_" + "0" * 20}],
                       lines=True)
    trimem.ok("import", "--quiet", str(first))
    second = write_json(tmp_path / "b.jsonl", [HEADER, rec("session", session_id="s2"),
                                               msg("s2", 0, "the second") | {"id": "src_" + "0" * 20}],
                        lines=True)
    rep = trimem.ok("import", "--quiet", str(second))
    assert rep["messages_stored"] == 1
    got = contents(trimem.home, "work")["sources"]
    assert [s[4] for s in got] == ["the first", "the second"] and len({s[5] for s in got}) == 2


async def test_a_memory_citing_a_ref_of_several_other_sessions_is_refused_before_writing(
        trimem, tmp_path):
    """The home holds ref m0 in two sessions; a file whose memory (of another session) cites
    m0 is refused whole by the check, not half-written by ``remember`` refusing the memory."""
    first = write_json(tmp_path / "first.jsonl", [HEADER, msg("s1", 0, "one", "m0"),
                                                  msg("s2", 0, "two", "m0")], lines=True)
    trimem.ok("import", "--quiet", str(first))
    held = contents(trimem.home, "work")["sources"]
    fact = rec("curated", session_id="s4", kind="fact", subject="Ana", relation="said",
               object="one", refs=["m0"])
    f = write_json(tmp_path / "second.jsonl", [HEADER, msg("s3", 0, "three", "m3"),
                                               msg("s4", 0, "four", "m4"), fact], lines=True)
    ran = trimem("import", "--quiet", str(f))
    assert ran.rc == 1 and "several other sessions" in ran.report["error"], ran.err
    assert contents(trimem.home, "work")["sources"] == held
