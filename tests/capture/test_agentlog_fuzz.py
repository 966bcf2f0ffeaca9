"""Fuzzing ``trimem import --from codex|gemini`` with hypothesis: Codex CLI rollouts (and the
older flat rollouts) and Gemini CLI recordings (JSON Lines, and the older whole-file JSON) built
as the fixtures show them, then mutated (hostile strings, wrong JSON types at every level, deep
nesting, values removed or repeated) and damaged (cut, bytes changed, not UTF-8, numbers past
what Python parses, a line over the reader's limit, a huge message). Each log is written where
the CLI writes it and imported into one real home (curation off) through what the command runs
(``find_logs`` then ``import_found``), and for every log:

- no crash: no exception escapes, and the report's errors are only the refusals a reader
  makes (an older Gemini JSON file that is not a session); a failure caught on the way (the
  capture records any exception as the log's error) counts as a crash;
- no hang: answered within ``BOUND_S`` seconds;
- no partial import: the home holds exactly as many more messages as the report says it stored;
- nothing stored twice: importing the same path again, or a copy of the log under another name
  (no cursor: every entry is read again), stores nothing.

The normal suite runs ``EXAMPLES`` logs per host; the slow-marked run ``SLOW_EXAMPLES``
(``TRIMEM_FUZZ_EXAMPLES`` sets it). ``test_print_figures`` prints what was tried (``pytest -s``).
One hostile log also goes through the real CLI process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from fuzzing import FUZZ, HOSTILE, answered, mutated, text, words
from hypothesis import given, settings, strategies as st

from trimem.capture.agentlog import find_logs, import_found
from trimem.capture.transcript import MAX_LINE_BYTES
from trimem.server.settings import Settings
from trimem.tools.runtime import Runtime

EXAMPLES, SLOW_EXAMPLES = 25, int(os.environ.get("TRIMEM_FUZZ_EXAMPLES", "200"))
HOSTS = ("codex", "gemini")
FIGURES: dict[str, dict] = defaultdict(lambda: {"cases": 0, "storing": 0, "stored": 0, "already_stored": 0,
                                               "reported_errors": 0, "crashes": 0, "hangs": 0,
                                               "partial": 0, "double": 0, "max_s": 0.0})
# a new session mostly, now and then one an earlier log named (its entries are stored already)
SIDS = st.uuids().map(str) | st.sampled_from(["0199a3f0-5b1e-7c42-9d7e-3a1f0c2b4d01",
                                              "5973b6c0-94b8-487b-a530-2aeb6098ae0e"])
CWDS = ["/home/u/proj", "/home/u/other", "/tmp/a\x00b", "relative/dir", "\ud800"]
stamp = st.sampled_from(["2025-10-02T09:00:01.000Z", "2026-05-04T10:00:08.000Z", "yesterday",
                         "0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00"])
said = st.one_of(words, words, words, text)


# -- Codex rollouts, valid by construction ----------------------------------------------------
@st.composite
def codex_item(draw, n: int) -> dict:
    kind = draw(st.sampled_from(["user", "assistant", "user", "assistant", "call", "output",
                                 "custom", "shell", "web", "reasoning", "developer", "context"]))
    call_id = f"call_{draw(st.integers(0, 4))}"
    if kind in ("user", "assistant", "developer"):
        part = "output_text" if kind == "assistant" else "input_text"
        return {"type": "message", "role": kind,
                "content": [{"type": part, "text": draw(said)}
                            for _ in range(draw(st.integers(1, 2)))]}
    if kind == "context":
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                "<environment_context>\n  <cwd>/home/u/proj</cwd>\n</environment_context>"}]}
    if kind == "call":
        return {"type": "function_call", "name": "shell", "call_id": call_id,
                "arguments": json.dumps({"command": ["bash", "-lc", draw(said)]})}
    if kind == "output":
        out = draw(st.sampled_from(["plain", "json", "parts"]))
        body = draw(said)
        return {"type": "function_call_output", "call_id": call_id, "output":
                body if out == "plain" else json.dumps({"output": body}) if out == "json"
                else [{"type": "input_text", "text": body}]}
    if kind == "custom":
        return {"type": "custom_tool_call", "status": "completed", "call_id": f"c{n}",
                "name": "apply_patch", "input": draw(said)}
    if kind == "shell":
        return {"type": "local_shell_call", "call_id": f"s{n}", "status": "completed",
                "action": {"type": "exec", "command": ["ls", draw(said)]}}
    if kind == "web":
        return {"type": "web_search_call", "status": "completed",
                "action": {"type": "search", "query": draw(said)}}
    return {"type": "reasoning", "summary": [{"type": "summary_text", "text": draw(said)}],
            "content": None, "encrypted_content": "gAAAAAB"}


@st.composite
def codex_rollout(draw) -> list:
    sid, cwd = draw(SIDS), draw(st.sampled_from(CWDS[:2]))
    items = [draw(codex_item(n)) for n in range(draw(st.integers(1, 8)))]
    if draw(st.integers(0, 3)) == 0:        # the older flat format
        return [{"id": sid, "timestamp": "2025-09-01T08:00:00.000Z", "instructions": None},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                 f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"}]},
                *items, {"record_type": "state"}]
    lines: list = [{"timestamp": "2025-10-02T09:00:00.000Z", "type": "session_meta", "payload": {
        "id": sid, "timestamp": "2025-10-02T09:00:00.000Z", "cwd": cwd,
        "originator": "codex_cli_rs", "cli_version": "0.46.0"}}]
    for it in items:
        lines.append({"timestamp": draw(stamp), "type": "response_item", "payload": it})
        if draw(st.integers(0, 3)) == 0:
            lines.append({"timestamp": draw(stamp), "type": draw(st.sampled_from(
                ["event_msg", "turn_context", "compacted"])), "payload": {"type": "user_message",
                                                                          "message": draw(said)}})
    return lines


# -- Gemini CLI recordings, valid by construction ---------------------------------------------
@st.composite
def gemini_message(draw, n: int) -> dict:
    kind = draw(st.sampled_from(["user", "gemini", "gemini", "user", "response", "info", "error"]))
    m: dict = {"id": f"6a1f3c1e-0001-4000-8000-{n:012d}", "timestamp": draw(stamp), "type": kind}
    if kind == "user":
        m["content"] = [{"text": draw(said)}]
        if draw(st.booleans()):
            m["displayContent"] = [{"text": draw(said)}]
    elif kind == "response":
        m["type"] = "user"
        m["content"] = [{"functionResponse": {"id": f"tool-{draw(st.integers(0, 3))}",
                                              "name": "read_file",
                                              "response": {"output": draw(said)}}}]
    elif kind == "gemini":
        m["content"] = draw(st.sampled_from(["str", "parts"]))
        m["content"] = draw(said) if m["content"] == "str" else [
            {"text": draw(said), "thought": True},
            {"functionCall": {"id": f"tool-{n}", "name": "run_shell_command",
                              "args": {"command": draw(said)}}}]
        m["model"] = "gemini-2.5-pro"
        if draw(st.booleans()):
            m["thoughts"] = [{"subject": "Plan", "description": draw(said)}]
        if draw(st.booleans()):
            cid = f"tool-{draw(st.integers(0, 3))}"
            m["toolCalls"] = [{"id": cid, "name": "read_file", "args": {"absolute_path": draw(said)},
                               "result": [{"functionResponse": {"id": cid, "name": "read_file",
                                                                "response": {"output": draw(said)}}}],
                               "status": "success", "timestamp": draw(stamp)}]
    else:
        m["content"] = draw(said)
    return m


@st.composite
def gemini_recording(draw) -> dict:
    msgs = [draw(gemini_message(n)) for n in range(draw(st.integers(1, 8)))]
    head = {"sessionId": draw(SIDS), "projectHash": "9c09f805" * 8,
            "startTime": "2026-05-04T10:00:00.000Z", "lastUpdated": "2026-05-04T10:00:00.000Z",
            "kind": draw(st.sampled_from(["main"] * 7 + ["subagent"]))}
    lines: list = [head]
    for m in msgs:
        lines.append(m)
        extra = draw(st.integers(0, 5))
        if extra == 0:
            lines.append({"$set": {"lastUpdated": draw(stamp)}})
        elif extra == 1:
            lines.append(json.loads(json.dumps(m)) | {"tokens": {"input": 9, "total": 9}})
        elif extra == 2:
            lines.append({"$rewindTo": m["id"]})
    if draw(st.booleans()):
        lines.append({"$set": {"messages": json.loads(json.dumps(msgs))}})
    return {"lines": lines, "whole": head | {"messages": msgs}}


# -- ... then mutated and damaged -------------------------------------------------------------
def jsonl(rows) -> bytes:
    rows = rows if isinstance(rows, list) else [rows]
    return b"".join(json.dumps(r, ensure_ascii=bool(i % 2)).encode("utf-8", "surrogatepass")
                    + b"\n" for i, r in enumerate(rows))


@st.composite
def damaged(draw, raw: bytes, big: dict | None) -> bytes:
    """``raw`` mostly intact, else cut, with bytes changed, not UTF-8, nested or numbered past
    what Python parses, or (a log of lines) with ``big`` added holding a huge message or one
    over the reader's line limit."""
    how = draw(st.sampled_from(["intact"] * 6 + ["cut", "bytes", "latin1", "deep", "bignum",
                                                 "huge", "too-long"]))
    rows = raw.split(b"\n")
    row = draw(st.integers(0, max(len(rows) - 2, 0)))
    if how == "cut" and raw:
        return raw[:draw(st.integers(0, len(raw) - 1))]
    if how == "bytes" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        return raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at + 1:]
    if how == "latin1":             # a string that is not UTF-8
        return raw.replace(b'"', '"caf\xe9 '.encode("latin-1"), 1)
    if how == "deep":               # past what Python's json nests (RecursionError)
        rows[row] = b"[" * 3_000 + rows[row] + b"]" * 3_000
    elif how == "bignum":           # past Python's 4,300 digits for int()
        rows[row] = rows[row].replace(b"null", b"1" * 5_000, 1).replace(b"0", b"9" * 5_000, 1)
    elif how in ("huge", "too-long") and big is not None:
        size = MAX_LINE_BYTES + 10 if how == "too-long" else 2_000_000
        rows.insert(row + 1, json.dumps(big).replace("HUGE", "z" * size).encode())
    return b"\n".join(rows)


@st.composite
def codex_log(draw) -> bytes:
    big = {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "HUGE"}}
    return draw(damaged(jsonl(draw(mutated(codex_rollout()))), big))


@st.composite
def gemini_log(draw) -> tuple[str, bytes]:
    rec = draw(gemini_recording())
    if draw(st.integers(0, 3)) == 0:        # the older whole-file JSON
        doc = draw(mutated(st.just(rec["whole"])))
        raw = json.dumps(doc, indent=draw(st.sampled_from([None, 2]))).encode("utf-8", "surrogatepass")
        return ".json", draw(damaged(raw, None))
    big = {"id": "big", "type": "user", "content": [{"text": "HUGE"}]}
    return ".jsonl", draw(damaged(jsonl(draw(mutated(st.just(rec["lines"])))), big))


LOGS = {"codex": codex_log().map(lambda raw: (".jsonl", raw)), "gemini": gemini_log()}
ROOT = st.sampled_from(["/home/u/proj", "", "\ud800/x", "rel"])


# -- one home, every log imported as the command does -----------------------------------------
@pytest.fixture(scope="module")
def home(tmp_path_factory):
    rt = Runtime(Settings(home=str(tmp_path_factory.mktemp("fuzz") / "home"),
                          curation=False).to_config())
    yield rt, tmp_path_factory.mktemp("logs")
    rt.close(2.0)


def messages(rt) -> int:
    return sum(rt.space(ns).sources.count() for ns in rt.store.namespaces())


def place(folder: Path, host: str, n: int, suffix: str, raw: bytes, root: str | None) -> Path:
    """The log where the CLI writes it; the folder the command would be given."""
    if host == "codex":
        top = folder / f"x{n}" / "sessions"
        log = top / "2025" / "10" / "02" / f"rollout-2025-10-02T09-00-00-{n}{suffix}"
    else:
        top = folder / f"x{n}" / "gh" / ".gemini" / "tmp"
        log = top / "proj" / "chats" / f"session-2026-05-04T10-00-{n:08x}{suffix}"
        log.parent.mkdir(parents=True)
        if root is not None:
            (log.parent.parent / ".project_root").write_bytes(root.encode("utf-8", "surrogatepass"))
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(raw)
    return top


# the errors a log's report may hold: an older whole-file Gemini session that is not one
REFUSALS = ("ValueError: not a JSON document", "ValueError: not a Gemini CLI session")


def run(rt, host: str, where: Path) -> dict:
    report, code = import_found(rt, rt.config.home, host, where, find_logs(host, where))
    json.dumps(report)                   # the command prints it
    assert code == (1 if report["errors"] else 0)
    return report


def check(home, host: str, log: tuple[str, bytes], whole: bool, root: str | None) -> None:
    rt, folder = home
    fig = FIGURES[host]
    fig["cases"] += 1
    suffix, raw = log
    top = place(folder, host, fig["cases"], suffix, raw, root)
    path = next(p for p in top.rglob("*") if p.is_file() and p.name.startswith(("rollout", "session")))
    where = top if whole else path
    before = messages(rt)
    rep = answered(fig, host, path, lambda: run(rt, host, where))
    failed = [e for x in rep["logs"] for e in x["errors"] if not e.startswith(REFUSALS)]
    if failed or rep["not_read"]:
        fig["crashes"] += 1
    assert not failed and not rep["not_read"], f"{host}: {failed or rep['not_read']} for {path}"
    fig["stored"] += rep["stored"]
    fig["storing"] += rep["stored"] > 0
    fig["already_stored"] += rep["already_stored"]
    fig["reported_errors"] += rep["errors"]
    after = messages(rt)
    if after - before != rep["stored"]:
        fig["partial"] += 1
    assert after - before == rep["stored"], f"{host}: {after - before} stored, report {rep} ({path})"
    again = [run(rt, host, where)]
    copy = path.with_name(path.name.replace("-", "-copy-", 1))     # no cursor: read whole again
    shutil.copyfile(path, copy)
    again.append(run(rt, host, copy))
    if any(r["stored"] for r in again) or messages(rt) != after:
        fig["double"] += 1
    assert [r["stored"] for r in again] == [0, 0] and messages(rt) == after, f"{host}: {path}"
    shutil.rmtree(folder / f"x{fig['cases']}")


@pytest.mark.parametrize("host", HOSTS)
def test_agentlog_import_fuzz(home, host):
    @settings(FUZZ, max_examples=EXAMPLES)
    @given(log=LOGS[host], whole=st.booleans(), root=st.none() | ROOT)
    def go(log, whole, root):
        check(home, host, log, whole, root)
    go()


@pytest.mark.slow
@pytest.mark.parametrize("host", HOSTS)
def test_agentlog_import_fuzz_long(home, host):
    @settings(FUZZ, max_examples=SLOW_EXAMPLES)
    @given(log=LOGS[host], whole=st.booleans(), root=st.none() | ROOT)
    def go(log, whole, root):
        check(home, host, log, whole, root)
    go()


def test_a_hostile_rollout_through_the_cli_process(tmp_path):
    lines = [json.dumps({"timestamp": "x", "type": "session_meta", "payload": {
        "id": "\ud800" + "h" * 300, "cwd": "/tmp/a\x00b"}}).encode(),
        *(h.encode("utf-8", "surrogatepass") for h in HOSTILE),
        '{"type": "response_item", "payload": {"type": "message", "role": "user", '
        '"content": "caf\xe9 \\ud800 \\u0000 kept"}}'.encode("latin-1"),
        json.dumps({"type": "response_item", "payload": {"type": "message", "role": "user",
                                                          "content": "stored \ud800 \x00"}}).encode(),
        b'{"type": "response_item", "payload": {"type": "message", "role": "user", "content": "'
        + b"z" * (MAX_LINE_BYTES + 1) + b'"}}',
        b"[" * 5_000, b'{"timestamp": ' + b"9" * 5_000 + b"}", b'{"type": "response_item"']
    log = tmp_path / "sessions" / "rollout-hostile.jsonl"
    log.parent.mkdir()
    log.write_bytes(b"\n".join(lines))
    env = dict(os.environ, TRIMEM_HOME=str(tmp_path / "home"), TRIMEM_CURATION="false")
    r = subprocess.run([sys.executable, "-m", "trimem.server.cli", "import", "--from", "codex",
                        str(log), "--quiet"], capture_output=True, env=env, timeout=120)
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    rep = json.loads(r.stdout)
    assert rep["stored"] >= 1 and rep["errors"] == 0
    skipped = rep["logs"][0]["skipped"]
    assert skipped["too-long"] == 1 and skipped["unreadable"] >= 4


def test_print_figures():
    for host, fig in sorted(FIGURES.items()):
        print(f"agent log import fuzz {host}: {json.dumps(fig)}")
    assert all(f["crashes"] == f["hangs"] == f["partial"] == f["double"] == 0 for f in FIGURES.values())
