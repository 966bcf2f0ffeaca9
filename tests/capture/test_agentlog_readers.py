"""The storage rule on other agent CLIs' logs (capture/codex.py, capture/gemini.py), on logs
written from each CLI's source (docs/capture.md, "Other agent CLIs"): what is stored, under
which speaker and ref, what is skipped and why, and how a read goes on from the last one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hostile_logs import HOSTILE

from trimem.capture import codex, gemini
from trimem.capture.transcript import TOOL_ARGS_CHARS, TOOL_RESULT_CHARS

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CODEX, CODEX_OLD = FIX / "codex_rollout.jsonl", FIX / "codex_rollout_legacy.jsonl"
GEMINI, GEMINI_OLD = FIX / "gemini_session.jsonl", FIX / "gemini_session_legacy.json"
SID = "0199a3f0-5b1e-7c42-9d7e-3a1f0c2b4d01"


def _by_kind(entries) -> dict[str, list]:
    out: dict[str, list] = {}
    for e in entries:
        out.setdefault(e.ref.split(":")[2], []).append(e)
    return out


def test_codex_rule_on_a_rollout_written_from_the_source():
    chunk = codex.read(str(CODEX), 0, 10_000, {})
    assert chunk.session_id == SID and chunk.end == CODEX.stat().st_size
    assert all(e.ref.startswith(f"codex:{SID}:") and e.origin == SID for e in chunk.entries)
    said = [(e.speaker, e.text) for e in chunk.entries if e.speaker != "tool"]
    assert said == [("user", "Add a --dry-run flag to deploy.sh"),
                    ("assistant", "I added --dry-run to deploy.sh."),
                    ("user", "Here is the failing run."), ("user", "yes"), ("user", "yes")]
    kinds = _by_kind(chunk.entries)
    notes = [e.text for e in kinds["call"] + kinds["item"]]
    assert [n.split("]")[0] for n in notes] == ["[tool shell", "[tool apply_patch",
                                                "[tool local_shell", "[tool web_search"]
    assert all("\n" not in n and len(n) <= len("[tool apply_patch] ") + TOOL_ARGS_CHARS + 1
               for n in notes)
    outs = {e.ref.split(":out:")[1]: e.text for e in kinds["out"]}
    assert outs["call_A1b2C3d4E5f6G7h8I9j0K1l2"].startswith("#!/bin/sh\nset -eu")   # the text, not the JSON
    assert "more characters]" in outs["call_A1b2C3d4E5f6G7h8I9j0K1l2"]
    assert len(outs["call_A1b2C3d4E5f6G7h8I9j0K1l2"]) < TOOL_RESULT_CHARS + 40
    assert outs["call_C3ls"] == "deploy.sh\nMakefile"          # an image part is left out
    assert {e.speaker for e in kinds["call"] + kinds["out"] + kinds["item"]} == {"tool"}
    yes = [e.ref for e in chunk.entries if e.text == "yes"]
    assert len(set(yes)) == 2 and yes[1] == yes[0] + "#1"     # said twice, stored twice
    everything = " ".join(e.text for e in chunk.entries)
    for never in ("SECRET-REASONING", "SUMMARY-OF-EARLIER", "AGENTS.md", "<environment_context>",
                  "permissions instructions", "iVBORw0KGgo", "gAAAAAB"):
        assert never not in everything
    assert chunk.skipped == {"entry:session_meta": 1, "role:developer": 1, "context": 2,
                             "entry:turn_context": 1, "entry:event_msg": 5, "reasoning": 1,
                             "block:input_image": 1, "entry:compacted": 1}
    assert codex.head(str(CODEX)) == (SID, "/home/u/proj")


def test_codex_older_flat_rollout():
    chunk = codex.read(str(CODEX_OLD), 0, 10_000, {})
    assert [(e.speaker, e.text) for e in chunk.entries] == [
        ("user", "Why does make fail?"), ("tool", '[tool shell] {"command":["make"]}'),
        ("tool", "make: *** No rule to make target 'all'."),
        ("assistant", "There is no 'all' target in the Makefile.")]
    assert chunk.skipped == {"entry:session_meta": 1, "context": 1, "entry:state": 2}
    assert codex.head(str(CODEX_OLD)) == ("5973b6c0-94b8-487b-a530-2aeb6098ae0e", "/home/u/old-proj")


def test_codex_reads_on_from_its_cursor_with_the_repeat_counts(tmp_path):
    lines = CODEX.read_bytes().splitlines(keepends=True)
    path = tmp_path / "rollout-x.jsonl"
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:20])    # Codex is mid-way through a line
    whole = codex.read(str(CODEX), 0, 10_000, {})
    first = codex.read(str(path), 0, 10_000, {})
    path.write_bytes(b"".join(lines))
    rest = codex.read(str(path), first.end, 10_000, first.state)
    assert [e.ref for e in first.entries + rest.entries] == [e.ref for e in whole.entries]
    assert rest.entries[-1].ref.endswith("#1")
    assert codex.read(str(path), rest.end, 10_000, rest.state).entries == []


def test_a_forked_codex_session_repeats_its_parents_refs(tmp_path):
    """A fork's file starts with its own session_meta, then repeats the parent's (session_meta
    included), then goes on: the repeated items keep the parent's refs, the new ones are new."""
    parent = CODEX.read_text().splitlines()
    own = json.dumps({"timestamp": "2025-10-03T08:00:00.000Z", "type": "session_meta",
                      "payload": {"id": "f0f0f0f0-0000-4000-8000-00000000000f",
                                  "forked_from_id": SID, "cwd": "/home/u/proj"}})
    new = json.dumps({"timestamp": "2025-10-03T08:00:05.000Z", "type": "response_item",
                      "payload": {"type": "message", "role": "user",
                                  "content": [{"type": "input_text", "text": "yes"}]}})
    fork = tmp_path / "rollout-fork.jsonl"
    fork.write_text("\n".join([own, *parent[:10], new]) + "\n")
    got = codex.read(str(fork), 0, 10_000, {})
    before = codex.read(str(CODEX), 0, 10_000, {}).entries
    assert got.session_id == "f0f0f0f0-0000-4000-8000-00000000000f"
    assert [e.ref for e in got.entries[:-1]] == [e.ref for e in before[:len(got.entries) - 1]]
    assert got.entries[-1].text == "yes" and got.entries[-1].ref.startswith(f"codex:{SID}:msg:")
    assert codex.head(str(fork))[0] == "f0f0f0f0-0000-4000-8000-00000000000f"


def test_gemini_rule_on_a_recording_written_from_the_source():
    chunk = gemini.read(str(GEMINI), 0, 10_000, {})
    sid = "8f14e45f-ceea-4d7a-9b1c-2f6e3a9b0c11"
    assert chunk.session_id == sid and chunk.end == GEMINI.stat().st_size
    assert len({e.ref for e in chunk.entries}) == len(chunk.entries)
    said = [(e.speaker, e.text) for e in chunk.entries if e.speaker != "tool"]
    assert said == [("user", "Add a dry-run flag to @deploy.sh"),      # what was typed
                    ("assistant", "I'll read the script first."),
                    ("assistant", "Done: deploy.sh has a --dry-run flag."),
                    ("user", "What is in this screenshot?")]
    tools = [e for e in chunk.entries if e.speaker == "tool"]
    assert [e.ref.split(":")[2] for e in tools] == ["call", "out", "call", "out"]
    assert tools[0].text == '[tool read_file] {"absolute_path":"/home/u/proj/deploy.sh"}'
    assert tools[1].text.startswith("#!/bin/sh") and "more characters]" in tools[1].text
    assert tools[3].text.startswith("Command: ls -1")
    everything = " ".join(e.text for e in chunk.entries)
    for never in ("SECRET-THOUGHT", "Listing files.", "SNAPSHOT-TEXT", "Got it. Thanks",
                  "session_context", "/stats", "Model switched", "API error", "Content from referenced"):
        assert never not in everything
    assert chunk.skipped == {"entry:metadata": 3, "thinking": 5, "repeat": 5, "entry:info": 1,
                             "command": 1, "rewind": 1, "context": 1, "compaction": 2,
                             "entry:error": 1, "block:inlineData": 1}


def test_gemini_older_whole_file_session_is_read_again_only_when_it_changed(tmp_path):
    path = tmp_path / "session-2025-09-01T08-00-3c59dc04.json"
    path.write_bytes(GEMINI_OLD.read_bytes())
    first = gemini.read(str(path), 0, 10_000, {})
    assert [e.speaker for e in first.entries] == ["user", "assistant", "tool", "tool", "assistant"]
    assert first.skipped == {"thinking": 1, "entry:warning": 1}
    same = gemini.read(str(path), first.end, 10_000, first.state)
    assert same.entries == [] and same.end == first.end
    doc = json.loads(path.read_text())
    doc["messages"].append({"id": "c0ffee00-0000-4000-8000-000000000009", "type": "user",
                            "timestamp": "2025-09-01T08:06:00.000Z", "content": "Add the target."})
    path.write_text(json.dumps(doc))                            # the CLI rewrites it whole
    again = gemini.read(str(path), first.end, 10_000, first.state)
    assert [e.ref for e in again.entries] == [e.ref for e in first.entries] + [
        "gemini:3c59dc04-8f11-4b7e-9a5e-0d2c1b3a4f55:msg:c0ffee00-0000-4000-8000-000000000009"]


def test_gemini_subagent_recordings_are_skipped(tmp_path):
    path = tmp_path / "sub.jsonl"
    meta = {"sessionId": "sub-1", "projectHash": "x", "kind": "subagent"}
    msg = {"id": "m1", "type": "user", "timestamp": "2026-05-04T10:00:00Z", "content": "task"}
    path.write_text(json.dumps(meta) + "\n" + json.dumps(msg) + "\n")
    chunk = gemini.read(str(path), 0, 10_000, {})
    assert chunk.entries == [] and chunk.skipped == {"subagent": 1}
    path.write_text(path.read_text() + json.dumps(dict(msg, id="m2")) + "\n")
    assert gemini.read(str(path), chunk.end, 10_000, chunk.state).skipped == {"subagent": 1}


def test_gemini_project_folder_from_the_cli_s_own_files(tmp_path):
    tmp = tmp_path / ".gemini" / "tmp"
    chats = tmp / "proj" / "chats"
    chats.mkdir(parents=True)
    log = chats / "session-2026-05-04T10-00-8f14e45f.jsonl"
    log.write_bytes(GEMINI.read_bytes())
    assert gemini.head(str(log)) == ("8f14e45f-ceea-4d7a-9b1c-2f6e3a9b0c11", None)
    (tmp_path / ".gemini" / "projects.json").write_text(json.dumps({"projects": {"/home/u/proj": "proj"}}))
    assert gemini.head(str(log))[1] == "/home/u/proj"           # by its short name
    (tmp_path / ".gemini" / "projects.json").write_text(json.dumps({"projects": {"/home/u/proj": "other"}}))
    assert gemini.head(str(log))[1] == "/home/u/proj"           # by the recording's projectHash
    (tmp_path / ".gemini" / "projects.json").write_text(json.dumps({"projects": {"/x": ["list"], "7": 7}}))
    hostile = chats / "session-hostile.jsonl"
    hostile.write_text(json.dumps({"sessionId": "s", "projectHash": ["not", "a", "hash"]}) + "\n")
    assert gemini.head(str(hostile)) == ("s", None)              # wrong types: no folder, no error
    (tmp / "proj" / ".project_root").write_text("/srv/work/proj\n")
    assert gemini.head(str(log))[1] == "/srv/work/proj"         # the CLI's own marker first
    assert hashlib.sha256(b"/home/u/proj").hexdigest() in GEMINI.read_text()


@pytest.mark.parametrize("mod", [codex, gemini], ids=["codex", "gemini"])
def test_hostile_lines_are_counted_never_fatal(tmp_path, mod):
    path = tmp_path / "log.jsonl"
    big = json.dumps({"type": "response_item", "payload": {"type": "message", "role": "user",
                                                           "content": [{"type": "input_text", "text": "z" * 9_000_000}]}})
    path.write_text("\n".join([*HOSTILE, big]) + "\n")
    chunk = mod.read(str(path), 0, 1000, {})
    assert chunk.end == path.stat().st_size
    assert chunk.skipped["unreadable"] >= 3 and chunk.skipped["too-long"] == 1
    assert all(len(e.text) < 1100 for e in chunk.entries)
    assert mod.head(str(path))[1] is None


def test_an_unreadable_older_gemini_file_is_an_error(tmp_path):
    path = tmp_path / "session-x.json"
    path.write_text("[" * 100_000)
    with pytest.raises(ValueError, match="not a JSON document"):
        gemini.read(str(path), 0, 1000, {})
