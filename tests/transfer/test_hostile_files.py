"""Hostile and malformed files of other tools: every one is answered (a JSON report on stdout,
never a traceback, within its bound), a file that cannot be read is refused whole with exit
status 1 and nothing written, and inside a readable file a message trimem cannot store is
refused alone and named in the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from cli_run import contents, write_json


def conv(cid: str, mapping: dict | list, **extra) -> dict:
    return {"conversation_id": cid, "title": "t", "mapping": mapping, **extra}


def node(nid: str, parent, children: list, role: str = "user", text: str = "hi", **msg) -> dict:
    return {"id": nid, "parent": parent, "children": children,
            "message": {"id": nid, "author": {"role": role}, "content": {"parts": [text]}, **msg}}


def test_a_chatgpt_branch_with_a_cycle_and_no_current_node_is_answered(trimem, tmp_path):
    f = write_json(tmp_path / "cycle.json", [conv("c1", {"X": node("X", "X", [])})])
    rep = trimem.ok("import", "--from", "chatgpt", "--quiet", str(f), timeout=20)
    assert rep["messages_stored"] == 1
    # a longer loop without a leaf, and a leaf hanging off a loop
    loop = {"A": node("A", "C", ["B"]), "B": node("B", "A", ["C"], "assistant", "b"),
            "C": node("C", "B", ["A"], text="c"), "L": node("L", "B", [], text="leaf")}
    f = write_json(tmp_path / "loop.json", [conv("c2", loop)])
    rep = trimem.ok("import", "--from", "chatgpt", "--quiet", str(f), timeout=20)
    assert rep["sessions"] == 1 and rep["messages_stored"] >= 1


def test_a_long_chatgpt_tree_is_read_in_linear_time(trimem, tmp_path):
    # a chain of 30,000 nodes with a leaf hanging off every one: finding the deepest leaf by
    # walking up from each leaf took 30,000 x 15,000 steps
    n = 30_000
    mapping = {f"n{i}": {"id": f"n{i}", "parent": f"n{i-1}" if i else None,
                         "children": [f"n{i+1}", f"l{i}"] if i < n - 1 else [], "message": None}
               for i in range(n)}
    mapping |= {f"l{i}": {"id": f"l{i}", "parent": f"n{i}", "children": [], "message": None}
                for i in range(n - 2)}
    mapping["n29999"] = node("n29999", "n29998", [], text="the deepest")
    f = write_json(tmp_path / "long.json", [conv("c1", mapping)])
    rep = trimem.ok("import", "--from", "chatgpt", "--quiet", str(f), timeout=30)
    assert rep["messages_stored"] == 1


def test_deep_nesting_and_huge_numbers_are_refused_with_a_report(trimem, tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000)
    ran = trimem("import", "--from", "chatgpt", "--quiet", str(deep), timeout=20)
    assert ran.rc == 1 and "nested deeper than" in ran.report["error"], ran.err
    assert ran.report["messages_stored"] == 0 and "nothing was imported" in ran.err
    nested = tmp_path / "nested.json"        # deep, but within what the JSON parser survives
    nested.write_text("[" * 500 + "]" * 500)
    ran = trimem("import", "--from", "claude", "--quiet", str(nested), timeout=20)
    assert ran.rc == 1 and "nested deeper than 64" in ran.report["error"]
    assert not trimem.home.exists() or contents(trimem.home)["sources"] == []


def test_a_time_out_of_range_refuses_that_conversation_alone(trimem, tmp_path):
    f = tmp_path / "times.json"
    f.write_text(json.dumps([conv("far", {"A": node("A", None, [])}, create_time=1.0),
                             conv("ok", {"B": node("B", None, [], text="fine")}, create_time=1.0)])
                 .replace('"create_time": 1.0', '"create_time": 1e400', 1))
    ran = trimem("import", "--from", "chatgpt", "--quiet", str(f), timeout=20)
    assert ran.rc == 0 and ran.report["messages_stored"] == 1, ran.err
    (refused,) = ran.report["refused"]
    assert "'far'" in refused["record"] and "create_time" in refused["reason"]
    msg_time = tmp_path / "msg_time.json"
    write_json(msg_time, [conv("m", {"A": node("A", None, ["B"], create_time=1e300),
                                     "B": node("B", "A", [], "assistant", "ok", create_time=5.0)})])
    rep = trimem.ok("import", "--from", "chatgpt", "--quiet", str(msg_time), timeout=20)
    assert rep["messages_stored"] == 1 and rep["messages_refused"] == 1
    assert "create_time" in rep["refused"][0]["reason"]


def test_memory_json_observations_must_be_a_list_of_strings(trimem, tmp_path):
    f = write_json(tmp_path / "memory.json", [
        {"type": "entity", "name": "Ana", "entityType": "person", "observations": "likes tea"},
        {"type": "entity", "name": "Ben", "entityType": "person",
         "observations": ["plays chess", 42, {"x": 1}]}], lines=True)
    rep = trimem.ok("import", "--from", "memory-json", "--quiet", str(f), timeout=20)
    assert rep["messages_stored"] == 1                      # Ben's one string observation
    texts = [s[4] for s in contents(trimem.home)["sources"]]
    assert texts == ["plays chess"]
    reasons = {r["record"]: r["reason"] for r in rep["refused"]}
    assert any("'Ana'" in w and "list of strings" in r for w, r in reasons.items()), reasons
    assert sum("'Ben'" in w for w in reasons) == 2


def test_one_oversized_chatgpt_answer_is_refused_not_the_file(trimem, tmp_path):
    big = "x" * 120_000
    f = write_json(tmp_path / "big.json", [
        conv("c1", {"A": node("A", None, ["B"], text="a question"),
                    "B": node("B", "A", ["C"], "assistant", big),
                    "C": node("C", "B", [], text="thanks")}),
        conv("c2", {"D": node("D", None, [], text="another chat")})])
    rep = trimem.ok("import", "--from", "chatgpt", "--quiet", str(f), timeout=30)
    assert rep["messages_stored"] == 3 and rep["messages_refused"] == 1
    (refused,) = rep["refused"]
    assert "'chatgpt:c1'" in refused["record"] and "'B'" in refused["record"]
    assert "120000 characters" in refused["reason"]
    assert sorted(s[2] for s in contents(trimem.home)["sources"]) == ["A", "C", "D"]


def test_repeated_ids_and_odd_shapes_are_refused_one_by_one(trimem, tmp_path):
    f = write_json(tmp_path / "odd.json", [
        conv("c1", {"A": node("A", None, [])}),
        conv("c1", {"B": node("B", None, [], text="same conversation id again")}),
        {"title": "no id", "mapping": {"C": node("C", None, [])}},
        "not a conversation",
        conv("c3", {"E": node("E", None, [], text="bad\ud800")}),
        conv("c4", ["not", "a", "mapping"])])
    rep = trimem.ok("import", "--from", "chatgpt", "--quiet", str(f), timeout=20)
    assert rep["messages_stored"] == 1 and len(rep["refused"]) == 5, rep["refused"]
    claude = write_json(tmp_path / "claude.json", [
        {"uuid": "u1", "chat_messages": [{"uuid": "m1", "sender": "human", "text": "hi"},
                                          {"uuid": "m1", "sender": "assistant", "text": "dup"},
                                          {"uuid": "m2", "sender": "human", "text": 7},
                                          "junk"]}])
    rep = trimem.ok("import", "--from", "claude", "--quiet", str(claude), timeout=20)
    assert rep["messages_stored"] == 1 and len(rep["refused"]) == 3, rep["refused"]


def test_a_file_of_another_kind_is_refused_whole(trimem, tmp_path):
    chat = write_json(tmp_path / "chat.json", [conv("c1", {"A": node("A", None, [])})])
    ran = trimem("import", "--from", "claude", "--quiet", str(chat))
    assert ran.rc == 1 and "not a claude" in ran.report["error"]
    big = tmp_path / "huge.json"
    with open(big, "wb") as fh:
        fh.truncate(600 * 2**20)                      # sparse: no disk used
    ran = trimem("import", "--from", "chatgpt", "--quiet", str(big))
    assert ran.rc == 1 and "TRIMEM_IMPORT_MAX_BYTES" in ran.report["error"]


def test_the_command_never_prints_a_traceback(tmp_path):
    """A real process: each refusal is one line on stderr and a JSON report on stdout."""
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000)
    env = dict(os.environ, TRIMEM_HOME=str(tmp_path / "home"), TRIMEM_CURATION="false")
    exe = os.path.join(os.path.dirname(sys.executable), "trimem")
    out = subprocess.run([exe, "import", "--from", "chatgpt", "--quiet", str(deep)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert json.loads(out.stdout)["error"].startswith("nested deeper than")
