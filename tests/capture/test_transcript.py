"""The transcript rule (capture/transcript.py) on a session file written from Claude Code's docs:
what is stored, under which speaker and ref, and what is skipped and why."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from trimem.capture.transcript import TOOL_ARGS_CHARS, TOOL_RESULT_CHARS, read_from

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code_session.jsonl"


def test_the_rule_on_a_session_written_from_the_docs():
    chunk = read_from(str(FIXTURE), 0, 10_000)
    got = {e.ref: e for e in chunk.entries}
    assert list(got) == ["u-1", "a-1", "a-2", "u-2", "a-3#0", "a-3#1", "u-img#1", "u-3"]
    assert chunk.session_id == "7c1d2a4e-0000-4000-8000-000000000001"
    assert chunk.end == FIXTURE.stat().st_size
    assert got["u-1"].speaker == "user" and got["u-1"].timestamp == "2025-10-01T09:00:01.000Z"
    assert got["a-1"].speaker == "assistant" and got["a-1"].text == "I'll look at the parser first."
    note = got["a-2"].text   # a tool call: one line, arguments cut, not the assistant's words
    assert got["a-2"].speaker == "tool"
    assert note.startswith('[tool Read] {"file_path":"/home/u/proj/dates.py"')
    assert "\n" not in note and len(note) <= len("[tool Read] ") + TOOL_ARGS_CHARS + 1
    res = got["u-2"]         # a tool result: a bounded excerpt that says what was cut
    assert res.speaker == "tool" and res.text.startswith("def parse(s):")
    assert len(res.text) < TOOL_RESULT_CHARS + 40 and "more characters]" in res.text
    assert got["a-3#1"].text.startswith("[tool Edit]")
    assert got["u-img#1"].text == "Here is the stack trace screenshot."
    everything = " ".join(e.text for e in chunk.entries)
    for never in ("SECRET-THOUGHT", "SUBAGENT-ONLY", "Caveat:", "<command-name>",
                  "continued from a previous", "Conversation compacted", "iVBORw0KGgo"):
        assert never not in everything
    assert chunk.skipped == {"entry:summary": 1, "command": 1, "meta": 2, "thinking": 1,
                             "sidechain": 1, "block:image": 1,
                             "entry:file-history-snapshot": 1, "entry:system": 1}


def test_reading_resumes_at_the_cursor_and_waits_for_a_whole_line(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:4]) + lines[4][:30])   # the host is mid-way through a line
    first = read_from(str(path), 0, 10_000)
    assert [e.ref for e in first.entries] == ["u-1"]
    assert first.end == len(b"".join(lines[:4]))
    path.write_bytes(b"".join(lines))
    rest = read_from(str(path), first.end, 10_000)
    assert [e.ref for e in rest.entries][0] == "a-1" and "u-1" not in {e.ref for e in rest.entries}
    assert read_from(str(path), rest.end, 10_000).entries == []


def test_a_rewritten_shorter_file_is_read_from_the_start(tmp_path):
    path = tmp_path / "t.jsonl"
    shutil.copy(FIXTURE, path)
    end = read_from(str(path), 0, 10_000).end
    path.write_bytes(FIXTURE.read_bytes().splitlines(keepends=True)[3])
    again = read_from(str(path), end, 10_000)
    assert [e.ref for e in again.entries] == ["u-1"]


def test_hostile_lines_are_counted_not_fatal(tmp_path):
    path = tmp_path / "t.jsonl"
    ok = {"type": "user", "uuid": "ok", "message": {"role": "user", "content": "fine"}}
    path.write_text("\n".join([
        "not json", "[" * 100_000, json.dumps([1, 2]), json.dumps({"type": 5}),
        json.dumps({"type": "user", "uuid": 7, "message": {}}),
        json.dumps({"type": "user", "uuid": "x", "message": {"content": 12}}),
        json.dumps({"type": "assistant", "uuid": "big", "message": {"content": "y" * 5000}}),
        json.dumps(ok)]) + "\n")
    chunk = read_from(str(path), 0, 1000)
    assert [e.ref for e in chunk.entries] == ["big", "ok"]
    assert chunk.entries[0].text.endswith("[… 4000 more characters]")
    assert chunk.skipped["unreadable"] == 3 and chunk.skipped["malformed"] == 1
