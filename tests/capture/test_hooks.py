"""``trimem hook`` end to end: real hook processes fed the host's JSON on stdin, the detached
drainer storing into a real LanceDB folder, and what a later process reads back."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from hookrun import hook_env, run_hook, settle, stored

from trimem.bench.cc_transcript import Transcript
from trimem.bench.planted import planted
from trimem.capture.project import project_namespace

NS = "proj-cap"


def _session(tmp_path, sid="sess-1", name="t.jsonl") -> Transcript:
    return Transcript(path=tmp_path / name, session_id=sid, cwd=str(tmp_path / "proj"))


def _exchange(t: Transcript, i: int, ask: str, reply: str) -> None:
    ts = f"2026-11-0{1 + i % 8}T10:{i % 60:02d}:00.000Z"
    t.user(ask, ts, uuid=f"u{i}")
    t.assistant(reply, ts, uuid=f"a{i}", thinking=f"PRIVATE-THOUGHT-{i}")


def test_stop_stores_each_new_message_once_with_its_ref_time_and_session(tmp_path):
    home = tmp_path / "home"
    env = hook_env(home, tmp_path, TRIMEM_HOOK_NAMESPACE=NS)
    t = _session(tmp_path)
    _exchange(t, 1, "Our deploy script needs a dry-run flag.", "I added --dry-run to deploy.sh.")
    t.tool("Bash", {"command": "./deploy.sh --dry-run"}, "would deploy 3 services", "2026-11-02T10:01:00Z")
    t0 = time.perf_counter()
    r = run_hook(t.hook_input("Stop"), env)
    took = time.perf_counter() - t0
    assert r.returncode == 0 and r.stdout == b"" and r.stderr == b"", r.stderr
    assert took < 5.0   # measured in bench/capture.py; here only: it does not wait for storing
    settle(home)
    rows = {row.ref: row for row in stored(home, NS)}
    assert set(rows) == {"u1", "a1", t.uuids[-2], t.uuids[-1]}
    assert rows["u1"].speaker == "user" and rows["a1"].speaker == "assistant"
    assert rows["u1"].session_id == "sess-1"
    ts = rows["u1"].timestamp
    assert ts is not None and ts.isoformat().startswith("2026-11-02T10:01")
    assert rows[t.uuids[-2]].text.startswith("[tool Bash]")
    assert rows[t.uuids[-2]].speaker == "tool"
    assert rows[t.uuids[-1]].speaker == "tool"
    assert not any("PRIVATE-THOUGHT" in row.text for row in rows.values())

    # more of the session, then three hooks at once (Stop, PreCompact, SessionEnd) and repeats
    _exchange(t, 2, "Also log which services were skipped.", "Done: skipped services are logged.")
    procs = [subprocess.Popen([sys.executable, "-m", "trimem.server.cli", "hook"],
                              stdin=subprocess.PIPE, env=env) for _ in range(3)]
    for p, ev in zip(procs, ("Stop", "PreCompact", "SessionEnd")):
        p.communicate(json.dumps(t.hook_input(ev)).encode(), timeout=30)
        assert p.returncode == 0
    for _ in range(3):
        assert run_hook(t.hook_input("Stop"), env).returncode == 0
    settle(home)
    refs = [row.ref for row in stored(home, NS)]
    assert len(refs) == len(set(refs)) == 6
    status = json.loads(subprocess.run([sys.executable, "-m", "trimem.server.cli", "status"],
                                       capture_output=True, env=env, check=True).stdout)
    last = status["capture"]["last"][0]
    assert last["namespace"] == NS and last["total"]["stored"] == 6
    assert last["last"]["complete"] is True and last["last"]["errors"] == []
    assert status["capture"]["pending_events"] == 0


def test_secrets_never_reach_the_store(tmp_path):
    home = tmp_path / "home"
    env = hook_env(home, tmp_path, TRIMEM_HOOK_NAMESPACE=NS)
    t = _session(tmp_path)
    secrets = planted()
    for i, p in enumerate(secrets):
        where = i % 3
        ts = f"2026-11-03T11:{i:02d}:00Z"
        if where == 0:
            t.user(f"note: {p.sentence}", ts)
            t.assistant("Noted.", ts)
        elif where == 1:
            t.user("what did we set up?", ts)
            t.assistant(f"We set this up: {p.sentence}", ts)
        else:
            t.tool("Bash", {"command": "cat config"}, f"config:\n{p.sentence}\n", ts)
    assert run_hook(t.hook_input("Stop"), env).returncode == 0
    settle(home)
    rows = stored(home, NS)
    assert len(rows) == t.count
    text = "\n".join(r.text for r in rows)
    assert [p.kind for p in secrets if p.value in text] == []
    assert "[redacted: github-token]" in text
    # and nowhere else in the memory folder, in any file (tables, indexes, capture state)
    blob = b"".join(f.read_bytes() for f in home.rglob("*") if f.is_file())
    assert [p.kind for p in secrets if p.value.encode() in blob] == []
    rec = json.loads(next((home / "_capture" / "transcripts").glob("*.json")).read_text())
    assert sum(rec["last"]["redacted"].values()) >= len(secrets)


def test_session_start_offers_the_project_and_drops_what_was_forgotten(tmp_path):
    from trimem.server.settings import Settings
    from trimem.tools.forget import forget
    from trimem.tools.runtime import Runtime

    home = tmp_path / "home"
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "src").mkdir()
    env = hook_env(home, tmp_path)
    ns = project_namespace(str(proj / "src"))
    t = Transcript(path=tmp_path / "a.jsonl", session_id="s-a", cwd=str(proj / "src"))
    _exchange(t, 1, "Migrate the billing tables to the new schema.", "Migration written.")
    _exchange(t, 2, "Codename for the launch is BLUEHERON, keep it internal.", "Understood.")
    start = t.hook_input("SessionStart")
    assert run_hook(start, env).stdout == b""      # nothing captured yet: nothing to say
    assert run_hook(t.hook_input("SessionEnd"), env).returncode == 0
    settle(home)
    out = run_hook(start, env)
    assert out.returncode == 0, out.stderr
    hso = json.loads(out.stdout)["hookSpecificOutput"]
    assert hso["hookEventName"] == "SessionStart"
    ctx = hso["additionalContext"]
    assert ns in ctx and "Migrate the billing tables" in ctx and "BLUEHERON" in ctx
    assert len(ctx) // 4 <= 800

    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    try:
        forget(rt, refs=["u2"], namespace=ns)
    finally:
        rt.close(2.0)
    after = run_hook(start, env)         # the stamp changed: the old context is not shown
    assert b"BLUEHERON" not in after.stdout
    settle(home)                         # ... and the drainer it started builds a new one
    ctx2 = json.loads(run_hook(start, env).stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Migrate the billing tables" in ctx2 and "BLUEHERON" not in ctx2
    assert "BLUEHERON" not in "".join(r.text for r in stored(home, ns))


@pytest.mark.parametrize("payload", [
    b"not json at all", b"[1,2]", b"{}", json.dumps({"hook_event_name": 5}).encode(),
    json.dumps({"hook_event_name": "Stop", "session_id": "x",
                "transcript_path": "/nonexistent/t.jsonl", "cwd": "/"}).encode(),
    json.dumps({"hook_event_name": "Stop", "session_id": "x", "cwd": "/"}).encode(),
    b"{" * 2_000_000,
], ids=["text", "list", "empty", "event-not-str", "no-such-transcript", "no-transcript", "huge"])
def test_a_bad_input_fails_open_and_says_why(tmp_path, payload):
    home = tmp_path / "home"
    env = hook_env(home, tmp_path)
    t0 = time.perf_counter()
    r = run_hook(payload, env)
    assert time.perf_counter() - t0 < 5.0
    assert r.returncode == 0 and r.stdout == b""
    assert r.stderr.startswith(b"trimem hook"), r.stderr
    status = json.loads(subprocess.run([sys.executable, "-m", "trimem.server.cli", "status"],
                                       capture_output=True, env=env, check=True).stdout)
    assert status["capture"]["hook_errors"][-1]["error"] in r.stderr.decode()


def test_events_it_does_not_act_on_say_nothing(tmp_path):
    env = hook_env(tmp_path / "home", tmp_path)
    for ev in ("Notification", "PreToolUse", "UserPromptSubmit"):   # prompt recall is opt-in
        r = run_hook({"hook_event_name": ev, "session_id": "s", "cwd": str(tmp_path),
                      "prompt": "hello"}, env)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert not (tmp_path / "home").exists()   # and nothing was created


def test_prompt_recall_adds_context_only_from_this_projects_memory(tmp_path):
    home = tmp_path / "home"
    env = hook_env(home, tmp_path, TRIMEM_HOOK_NAMESPACE=NS, TRIMEM_HOOK_PROMPT_RECALL="true")
    t = _session(tmp_path)
    _exchange(t, 1, "The staging database listens on port 6543, not the default.",
              "Noted: staging Postgres is on port 6543.")
    _exchange(t, 2, "Lunch order for Friday is ramen for the team.", "Added to the list.")
    assert run_hook(t.hook_input("Stop"), env).returncode == 0
    settle(home)
    ask = t.hook_input("UserPromptSubmit", prompt="which port does the staging database use?")
    r = run_hook(ask, env, timeout=60)
    assert r.returncode == 0, r.stderr
    hso = json.loads(r.stdout)["hookSpecificOutput"]
    assert hso["hookEventName"] == "UserPromptSubmit"
    assert "port 6543" in hso["additionalContext"] and len(hso["additionalContext"]) // 4 <= 600
    # another project's prompt reads another namespace: nothing stored there, nothing added
    other = hook_env(home, tmp_path, TRIMEM_HOOK_PROMPT_RECALL="true")
    r2 = run_hook(ask | {"cwd": str(tmp_path / "elsewhere")}, other, timeout=60)
    assert (r2.returncode, r2.stdout) == (0, b""), r2.stderr
