"""An import killed in the middle of a session leaves nothing half-imported: the next import or
export settles the intent it left (``transfer/journal.py``), and importing the file again
completes it. The kill is real (``os._exit`` in a real ``trimem import`` process, at the moment
it is about to commit a session's messages, after that session's curated memories and row)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from filelock import FileLock

from cli_run import contents, write_json

HEADER = {"format": "trimem-export", "version": 1}
KILLER = textwrap.dedent("""
    import os, sys, threading
    from trimem.server.cli import main

    left = int(os.environ["KILL_AT"])
    def prof(frame, event, arg):
        global left
        if event == "call" and frame.f_code.co_name == "add" \\
                and frame.f_code.co_filename.endswith(os.path.join("storage", "sources.py")):
            left -= 1
            if left == 0:
                os._exit(9)
    sys.setprofile(prof)
    threading.setprofile(prof)
    sys.exit(main(sys.argv[1:]))
""")


def rec(rtype: str, **fields) -> dict:
    return {"type": rtype, "namespace": "work", **fields}


def the_file(tmp_path):
    return write_json(tmp_path / "two.jsonl", [
        HEADER, rec("session", session_id="s1"),
        rec("message", session_id="s1", seq=0, ref="m1", content="Ana moved to Lisbon."),
        rec("curated", session_id="s1", kind="fact", subject="Ana", relation="lives in",
            object="Lisbon", refs=["m1"]),
        rec("session", session_id="s2"),
        rec("message", session_id="s2", seq=0, ref="m2", content="Ana adopted a cat, Miso."),
        rec("message", session_id="s2", seq=1, content="A message without a ref."),
        rec("curated", session_id="s2", kind="fact", subject="Ana", relation="has a cat",
            object="Miso", refs=["m2", "m1"])], lines=True)


@pytest.mark.parametrize("kill_at", [1, 2])
def test_a_killed_import_is_settled_by_the_next_start(trimem, tmp_path, kill_at):
    f = the_file(tmp_path)
    env = dict(os.environ, TRIMEM_HOME=str(trimem.home), TRIMEM_CURATION="false",
               KILL_AT=str(kill_at))
    run = subprocess.run([sys.executable, "-c", KILLER, "import", "--quiet", str(f)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 9, run.stderr
    assert len(list((trimem.home / "_imports").glob("*.json"))) == 1   # the intent it left
    rep = trimem.ok("export", "--quiet", str(tmp_path / "out.jsonl"))
    assert len(rep["notes"]) == 1 and "undone" in rep["notes"][0], rep
    assert list((trimem.home / "_imports").glob("*.json")) == []
    got = contents(trimem.home, "work")
    for sid, n_msgs in {"s1": 1, "s2": 2}.items():
        msgs = [s for s in got["sources"] if s[0] == sid]
        assert len(msgs) in (0, n_msgs), got       # a session is there whole or not at all
    assert got["sessions"] == sorted({s[0] for s in got["sources"]})
    assert len(got["curated"]) == (0 if kill_at == 1 else 1)
    lines = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert lines[-1] == {"type": "end", "records": len(lines) - 2}
    rep = trimem.ok("import", "--quiet", str(f))   # again: it completes
    got = contents(trimem.home, "work")
    assert len(got["sources"]) == 3 and len(got["curated"]) == 2 and got["sessions"] == ["s1", "s2"]


def test_the_intent_of_a_live_import_is_left_alone(trimem, tmp_path):
    trimem.ok("import", "--quiet", str(the_file(tmp_path)))
    folder = trimem.home / "_imports"
    intent = folder / "123-live.json"
    intent.write_text(json.dumps({"namespace": "work", "session_id": "s3", "session": None,
                                  "source_ids": ["src_00000000000000000000"], "memory_ids": []}))
    with FileLock(folder / "123-live.json.lock"):     # its writer is alive
        rep = trimem.ok("export", "--quiet", str(tmp_path / "out.jsonl"))
        assert rep["notes"] == [] and intent.exists()
    rep = trimem.ok("export", "--quiet", str(tmp_path / "out.jsonl"))   # its writer died
    assert "undone" in rep["notes"][0] and not intent.exists()
    assert [s[0] for s in contents(trimem.home, "work")["sources"]] == ["s1", "s2", "s2"]
