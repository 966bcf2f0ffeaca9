"""`trimem restore`: a memory that consolidation merged is made active again from the command
line; unknown and unrestorable ids get a clear message and a non-zero exit."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from helpers import payload
from trimem.server.app import build_server
from trimem.server.cli import main
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio


def fact(s, r, o, ref):
    return {"subject": s, "relation": r, "object": o, "context": "said in passing", "refs": [ref]}


SESSIONS = [("c1", "2023-01-10T10:00:00", [fact("Ana", "lives in", "Lisbon", "c1:0"),
                                           fact("Ben", "adopted", "a beagle puppy named Biscuit", "c1:1")]),
            ("c2", "2023-03-10T10:00:00", [fact("Ben", "adopted", "a beagle puppy named Biscuit", "c2:1"),
                                           fact("Ana", "lives in", "Madrid", "c2:0")])]


@pytest.fixture
def cli_env(home, tmp_path_factory, monkeypatch):
    """The CLI reads its settings from the environment, as a user's shell would give them."""
    monkeypatch.setenv("TRIMEM_HOME", str(home))
    return Settings(home=str(home))


async def _merged_store(settings) -> tuple[str, str, str]:
    """Remember the same fact in two sessions and consolidate: (merged id, survivor, a source)."""
    server = build_server(settings)
    try:
        async with Client(server) as c:
            for sid, when, facts in SESSIONS:
                msgs = [{"content": f"turn {j} of {sid}", "speaker": "Ana", "ref": f"{sid}:{j}"}
                        for j in range(2)]
                out = payload(await c.call_tool("remember", {"messages": msgs, "session_id": sid,
                                                             "session_time": when,
                                                             "curated": {"facts": facts}}))
            assert server.runtime.curation.wait_idle(60)
            res = payload(await c.call_tool("consolidate", {"min_cluster_size": 2}))
    finally:
        server.runtime.close()
    merges = [op for op in res["operations"] if op.get("op") == "merge"]
    assert len(merges) == 1 and len(merges[0]["ids"]) == 1
    return merges[0]["ids"][0], merges[0]["into"], out["source_ids"][0]


async def _explain(settings, id: str) -> dict:
    server = build_server(settings)
    try:
        async with Client(server) as c:
            return payload(await c.call_tool("explain", {"id": id}))
    finally:
        server.runtime.close()


async def test_restore_makes_a_merged_memory_active_again(cli_env, capsys):
    merged, survivor, _ = await _merged_store(cli_env)
    before = await _explain(cli_env, merged)
    assert before["record"]["status"] == "merged"
    capsys.readouterr()

    assert main(["restore", merged]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["id"] == merged and out["changed"] and out["status"] == "active"
    assert out["was"] == "merged" and out["released_from"] == survivor
    assert out["namespace"] == "default" and "Biscuit" in out["text"]

    after = await _explain(cli_env, merged)
    assert after["record"]["status"] == "active"
    assert "merged_into" not in after["record"]["lineage"]
    assert after["record"]["lineage"]["history"][-1]["op"] == "restored"
    assert any(h["op"] == "restore" for h in after["history"])          # in the audit log
    keep = (await _explain(cli_env, survivor))["record"]["lineage"]
    assert merged not in {a["id"] for a in keep.get("absorbed", [])}


async def test_restore_refuses_what_it_cannot_restore(cli_env, capsys):
    merged, survivor, source = await _merged_store(cli_env)
    capsys.readouterr()
    cases = [([survivor], "only a merged or superseded memory"),
             (["fct_no_such_memory"], "is unknown in namespace 'default'"),
             ([source], "is a raw message, not a memory"),
             ([merged, "--namespace", "elsewhere"], "no namespace 'elsewhere'")]
    for argv, message in cases:
        assert main(["restore", *argv]) == 1, argv
        err = capsys.readouterr()
        assert message in err.err and err.out == ""
    assert (await _explain(cli_env, merged))["record"]["status"] == "merged"   # untouched
