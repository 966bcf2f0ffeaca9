"""The core flow against a real S3-compatible endpoint (moto's server): remember, recall with
every strategy, forget; and two `trimem serve` processes sharing one bucket, writing at the same
time, with no write lost or duplicated."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp import Client, StdioServerParameters

from helpers import WIKI_SESSIONS, payload
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies import registry

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_remember_recall_every_strategy_forget_on_s3(s3_env, tmp_path_factory):
    server = build_server(Settings(home=s3_env["TRIMEM_HOME"]))
    async with Client(server) as c:
        for sid, when, turns in WIKI_SESSIONS:
            payload(await c.call_tool("remember", {
                "session_id": sid, "session_time": when,
                "messages": [{"content": t, "speaker": s, "ref": f"{sid}:{k}"}
                             for k, (s, t) in enumerate(turns)]}))
        assert server.runtime.curation.wait_idle(180)
        names = [s for s in registry.names()]
        assert set(names) >= {"plain", "hybrid", "workspace", "wiki", "auto"}
        for strategy in names:
            out = payload(await c.call_tool("recall", {"query": "Where did Ana move for her job?",
                                                       "strategy": strategy}))
            assert "s1:0" in {s["ref"] for s in out["sources"]}, strategy
        gone = payload(await c.call_tool("forget", {"refs": ["s1:0"]}))
        assert gone["removed_sources"] == 1
        for strategy in ("plain", "auto"):
            out = payload(await c.call_tool("recall", {"query": "Where did Ana move for her job?",
                                                       "strategy": strategy}))
            assert "s1:0" not in {s["ref"] for s in out["sources"]}
            assert "I moved to Berlin last month" not in out["context"]
    server.runtime.close()
    import boto3

    s3 = boto3.client("s3", endpoint_url=s3_env["AWS_ENDPOINT"], aws_access_key_id="testing",
                      aws_secret_access_key="testing", region_name="us-east-1")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=s3_env["bucket"]).get("Contents", [])]
    assert any("__sources__" in k for k in keys)          # the data really is in the bucket


def _params(env: dict) -> StdioServerParameters:
    keep = {k: os.environ[k] for k in ("PATH", "HOME", "TMPDIR", "LANG") if k in os.environ}
    return StdioServerParameters(command=sys.executable, args=["-m", "trimem.server.cli", "serve"],
                                 env=keep | {k: v for k, v in env.items() if k != "bucket"}
                                 | {"TRIMEM_CURATION": "false", "LANCEDB_LOG": "error"})


async def test_two_serve_processes_share_one_bucket(s3_env, tmp_path_factory):
    env = dict(s3_env)
    n_calls, per_call = 12, 5
    results: dict[str, list] = {}

    async def writer(name: str):
        async with Client(_params(env)) as c:
            outs = []
            for k in range(n_calls):   # a session per call, and one session both append to
                msgs = [{"content": f"{name} note {k}.{j} about the shared garden plan",
                         "speaker": name, "ref": f"{name}-{k}-{j}"} for j in range(per_call)]
                sid = "shared" if k % 3 == 0 else f"{name}-{k}"
                outs.append(payload(await c.call_tool("remember", {"messages": msgs,
                                                                   "session_id": sid,
                                                                   "namespace": "team"})))
            results[name] = outs

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer, "p1")
        tg.start_soon(writer, "p2")
    assert sum(o["stored"] for outs in results.values() for o in outs) == 2 * n_calls * per_call

    async with Client(_params(env)) as c:   # a third process reads what both wrote
        out = payload(await c.call_tool("recall", {"query": "shared garden plan note",
                                                   "strategy": "plain", "namespace": "team"}))
        assert out["sources"]
    from trimem.tools.runtime import Runtime

    rt = Runtime(Settings(home=s3_env["TRIMEM_HOME"], curation=False).to_config())
    try:
        rows = rt.space("team").sources.all()
        refs = [r.ref for r in rows]
        assert len(refs) == 2 * n_calls * per_call            # nothing lost
        assert len(set(refs)) == len(refs)                    # nothing twice
        ids = {i for outs in results.values() for o in outs for i in o["source_ids"]}
        assert ids == {r.id for r in rows}
        shared = sorted(r.seq for r in rows if r.session_id == "shared")
        assert len(shared) == 2 * 4 * per_call
    finally:
        rt.close()
