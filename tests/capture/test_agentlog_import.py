"""``trimem import --from codex|gemini``: other agent CLIs' logs stored into a real LanceDB
folder through the capture path (capture/agentlog.py -> drain.capture -> remember), read on
from a cursor per log, and one run through the real CLI process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_logs import HOSTILE

from trimem.capture.agentlog import find_logs, import_found
from trimem.capture.project import project_namespace
from trimem.capture.status import capture_status
from trimem.server.settings import Settings
from trimem.tools.forget import forget
from trimem.tools.runtime import Runtime

FIX = Path(__file__).resolve().parents[1] / "fixtures"
SID = "0199a3f0-5b1e-7c42-9d7e-3a1f0c2b4d01"
NS = project_namespace("/home/u/proj")
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


@pytest.fixture
def rt(tmp_path):
    rt = Runtime(Settings(home=str(tmp_path / "home"), curation=False).to_config())
    yield rt
    rt.close(2.0)


def run(rt, host: str, path: Path, namespace: str | None = None) -> tuple[dict, int]:
    return import_found(rt, rt.config.home, host, path, find_logs(host, path), namespace)


def rows(rt, ns: str = NS) -> dict:
    if ns not in rt.store.namespaces():
        return {}
    return {r.ref: r for r in rt.space(ns).sources.all()}


def _line(kind: str, payload: dict, ts: str = "2025-10-02T10:00:00.000Z") -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload}) + "\n"


def test_codex_import_goes_on_from_its_cursor_and_stores_nothing_twice(rt, tmp_path):
    lines = FIX.joinpath("codex_rollout.jsonl").read_text().splitlines(keepends=True)
    day = tmp_path / "sessions" / "2025" / "10" / "02"
    day.mkdir(parents=True)
    log = day / f"rollout-2025-10-02T09-00-00-{SID}.jsonl"
    (day / "notes.txt").write_text("not a rollout")
    log.write_text("".join(lines[:12]))
    rep, code = run(rt, "codex", tmp_path / "sessions")
    assert code == 0 and [x["path"] for x in rep["logs"]] == [str(log)]
    first = rep["logs"][0]
    assert (first["namespace"], first["session_id"], first["stored"]) == (NS, SID, 4)
    assert run(rt, "codex", log)[0]["stored"] == 0                 # the same import again
    log.write_text("".join(lines))                                 # the session went on
    rep, _ = run(rt, "codex", log)
    assert (rep["stored"], rep["already_stored"]) == (8, 0)
    got = rows(rt)
    assert len(got) == 12 and {r.session_id for r in got.values()} == {SID}
    user = next(r for r in got.values() if r.text == "Add a --dry-run flag to deploy.sh")
    assert user.speaker == "user" and str(user.timestamp).startswith("2025-10-02 09:00:01")
    copy = tmp_path / f"rollout-copy-{SID}.jsonl"                   # no cursor for this path
    copy.write_text(log.read_text())
    rep, _ = run(rt, "codex", copy)
    assert (rep["stored"], rep["already_stored"]) == (0, 12)
    status = capture_status(rt.config.home, NS)
    assert status["transcripts"] == 2 and {r["host"] for r in status["last"]} == {"codex"}
    assert status["last"][0]["last"]["event"] == "import"


def test_a_forgotten_message_never_comes_back_not_even_through_a_fork(rt, tmp_path):
    parent = tmp_path / f"rollout-a-{SID}.jsonl"
    parent.write_bytes(FIX.joinpath("codex_rollout.jsonl").read_bytes())
    run(rt, "codex", parent)
    ref = next(ref for ref, r in rows(rt).items() if r.text == "Add a --dry-run flag to deploy.sh")
    forget(rt, refs=[ref], namespace=NS)
    copy = tmp_path / f"rollout-b-{SID}.jsonl"
    copy.write_bytes(parent.read_bytes())
    assert run(rt, "codex", copy)[0]["stored"] == 0
    assert ref not in rows(rt)
    fork_id = "f0f0f0f0-0000-4000-8000-00000000000f"
    fork = tmp_path / f"rollout-fork-{fork_id}.jsonl"
    fork.write_text(_line("session_meta", {"id": fork_id, "forked_from_id": SID,
                                           "cwd": "/home/u/proj"})
                    + parent.read_text()
                    + _line("response_item", {"type": "message", "role": "user", "content": [
                        {"type": "input_text", "text": "Now add a --verbose flag."}]}))
    rep, _ = run(rt, "codex", fork)
    assert rep["stored"] == 1 and ref not in rows(rt)
    new = next(r for r in rows(rt).values() if r.text == "Now add a --verbose flag.")
    assert new.session_id == fork_id


def test_gemini_import_follows_a_recording_as_it_grows(rt, tmp_path):
    chats = tmp_path / "gh" / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    (chats.parent / ".project_root").write_text("/home/u/proj")
    lines = FIX.joinpath("gemini_session.jsonl").read_text().splitlines(keepends=True)
    log = chats / "session-2026-05-04T10-00-8f14e45f.jsonl"
    log.write_text("".join(lines[:6]))          # the reply, before its tool call was added
    rep, code = run(rt, "gemini", tmp_path / "gh")
    assert code == 0 and rep["logs"][0]["namespace"] == NS and rep["stored"] == 2
    log.write_text("".join(lines))
    rep, _ = run(rt, "gemini", log)
    assert rep["stored"] == 6 and rep["logs"][0]["skipped"]["repeat"] >= 1
    assert run(rt, "gemini", log)[0]["stored"] == 0
    old = chats / "session-2025-09-01T08-00-3c59dc04.json"
    old.write_bytes(FIX.joinpath("gemini_session_legacy.json").read_bytes())
    assert run(rt, "gemini", old)[0]["stored"] == 5
    doc = json.loads(old.read_text())
    doc["messages"].append({"id": "c0ffee00-0000-4000-8000-000000000009", "type": "gemini",
                            "timestamp": "2025-09-01T08:07:00.000Z", "content": "Added it."})
    old.write_text(json.dumps(doc))             # rewritten whole, one message longer
    rep, _ = run(rt, "gemini", old)
    assert (rep["stored"], rep["already_stored"]) == (1, 5)
    assert len(rows(rt)) == 14


def test_which_files_a_folder_import_reads(tmp_path):
    (tmp_path / "a" / "chats").mkdir(parents=True)
    for name in ("session-1.jsonl", "session-1.json", "session-2.json", "logs.json",
                 "checkpoint-x.json", "rollout-3.jsonl", "rollout-4.jsonl.zst"):
        (tmp_path / "a" / "chats" / name).write_text("{}\n")
    gem = find_logs("gemini", tmp_path)
    assert [p.name for p in gem.logs] == ["session-1.jsonl", "session-2.json"]
    one = tmp_path / "a" / "chats" / "session-1.json"
    assert find_logs("gemini", one).logs == [one]          # named: read, successor or not
    cod = find_logs("codex", tmp_path)
    assert [p.name for p in cod.logs] == ["rollout-3.jsonl"]
    assert [Path(x["path"]).name for x in cod.not_read] == ["rollout-4.jsonl.zst"]
    with pytest.raises(FileNotFoundError):
        find_logs("codex", tmp_path / "nowhere")


def test_a_secret_in_a_tool_output_is_redacted(rt, tmp_path):
    log = tmp_path / "rollout-s.jsonl"
    log.write_text(_line("session_meta", {"id": "s-1", "cwd": "/home/u/proj"})
                   + _line("response_item", {"type": "function_call", "name": "shell",
                                             "arguments": '{"command":["cat",".env"]}',
                                             "call_id": "call_env"})
                   + _line("response_item", {"type": "function_call_output", "call_id": "call_env",
                                             "output": f"DEBUG=1\nGITHUB_TOKEN={TOKEN}\n"}))
    rep, _ = run(rt, "codex", log)
    assert rep["stored"] == 2 and sum(rep["logs"][0]["redacted"].values()) == 1
    out = next(r for r in rows(rt).values() if (r.ref or "").endswith(":out:call_env"))
    assert TOKEN not in out.text and "[redacted:" in out.text and "DEBUG=1" in out.text


def test_a_hostile_log_is_reported_not_crashed(rt, tmp_path):
    log = tmp_path / "rollout-h.jsonl"
    log.write_text("\n".join([json.dumps({"type": "session_meta", "payload": {
        "id": "h" * 5000, "cwd": "/tmp/a\x00b"}}), *HOSTILE]) + "\n")
    rep, code = run(rt, "codex", log)
    assert code == 0 and rep["logs"][0]["errors"] == [] and rep["logs"][0]["namespace"] == "default"
    assert rep["logs"][0]["skipped"]["unreadable"] >= 3
    bad = tmp_path / "session-bad.json"
    bad.write_text("{" * 200_000)
    rep, code = run(rt, "gemini", bad)
    assert code == 1 and "not a JSON document" in rep["logs"][0]["errors"][0]
    packed = tmp_path / "archive" / "rollout-z.jsonl.zst"
    packed.parent.mkdir()
    packed.write_bytes(b"\x28\xb5\x2f\xfd")
    rep, code = run(rt, "codex", packed.parent)
    assert code == 1 and rep["logs"] == [] and "zstd" in rep["not_read"][0]["error"]


def test_the_cli_imports_the_default_folder_and_fails_clearly(tmp_path):
    home, gh = tmp_path / "home", tmp_path / "gh"
    proj = tmp_path / "work" / "billing"
    chats = gh / ".gemini" / "tmp" / "billing" / "chats"
    chats.mkdir(parents=True)
    proj.mkdir(parents=True)
    (chats.parent / ".project_root").write_text(str(proj))
    (chats / "session-2026-05-04T10-00-8f14e45f.jsonl").write_bytes(
        FIX.joinpath("gemini_session.jsonl").read_bytes())
    env = dict(os.environ, TRIMEM_HOME=str(home), TRIMEM_CURATION="false", GEMINI_CLI_HOME=str(gh))
    cli = [sys.executable, "-m", "trimem.server.cli"]
    r = subprocess.run([*cli, "import", "--from", "gemini", "--quiet"], capture_output=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["stored"] == 8 and rep["logs"][0]["namespace"] == project_namespace(str(proj))
    r = subprocess.run([*cli, "import", "--from", "codex", str(tmp_path / "nowhere")],
                       capture_output=True, env=env, timeout=60)
    assert r.returncode == 1 and r.stdout == b""
    assert r.stderr.startswith(b"trimem import:") and b"Traceback" not in r.stderr
    st = json.loads(subprocess.run([*cli, "status"], capture_output=True, env=env, check=True,
                                   timeout=60).stdout)
    assert st["capture"]["last"][0]["host"] == "gemini"
    assert st["capture"]["last"][0]["total"]["stored"] == 8


def test_ids_and_file_names_that_are_not_utf8_do_not_break_an_import(rt, tmp_path):
    """A JSON ``\\ud800`` in a session id, and a file name that is not UTF-8, are kept out of
    what is written (the cursor, the store, the report) instead of ending the import."""
    text = _line("session_meta", {"id": "\ud800abc", "cwd": "/tmp/x\udcff"}) + _line(
        "response_item", {"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": "hi \ud800 there"}]})
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "rollout-a.jsonl").write_text(text)
    with open(os.path.join(bytes(tmp_path / "logs"), b"rollout-\xff.jsonl"), "wb") as fh:
        fh.write(text.encode())
    rep, code = run(rt, "codex", tmp_path / "logs")
    assert code == 0 and rep["stored"] == 1 and rep["already_stored"] == 1
    assert {x["session_id"] for x in rep["logs"]} == {"?abc"}
    ns = rep["logs"][0]["namespace"]
    assert [r.text for r in rows(rt, ns).values()] == ["hi ? there"]
    assert json.loads(json.dumps(rep))["stored"] == 1


def test_a_line_longer_than_one_read_is_skipped_and_the_log_read_on(rt, tmp_path):
    """A line past the 32 MB one read takes (a huge pasted image, say) holds no newline in
    that window: it is skipped and counted like any line over the limit, and what follows it
    is stored, instead of the log's cursor stopping before it for good."""
    log = tmp_path / "rollout-big.jsonl"
    say = [_line("response_item", {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": t}]}) for t in ("before the image", "after the image")]
    with open(log, "w") as fh:
        fh.write(_line("session_meta", {"id": "big-1", "cwd": "/home/u/proj"}) + say[0])
        fh.write(_line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 33_000_000}]}))
        fh.write(say[1])
    rep, code = run(rt, "codex", log)
    assert code == 0 and rep["stored"] == 2 and rep["logs"][0]["skipped"]["too-long"] == 1
    assert sorted(r.text for r in rows(rt).values()) == ["after the image", "before the image"]
