"""What is kept after forget, and growth through reads. The recall log has a
retention policy and a size bound (TRIMEM_RECALL_LOG_*), ``forget`` removes recall records (by
id, by time, all, and those citing forgotten sources), and reads create no tables."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
from mcp import Client

from helpers import error_text, payload
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio
SECRET = "qx-vault-7731-horsefly"


def folders(home: Path) -> set[str]:
    return {p.name for p in home.iterdir()}   # one folder per table


def on_disk(home: Path, needle: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


async def remember(c, ns: str = "main", ref: str = "p1", text: str = "The vault code is 7731."):
    return payload(await c.call_tool("remember", {"namespace": ns, "session_id": "s1",
                                                  "messages": [{"content": text, "ref": ref,
                                                                "speaker": "Ona"}]}))


async def recall(c, query: str, ns: str = "main", **kw) -> dict:
    return payload(await c.call_tool("recall", {"query": query, "namespace": ns,
                                                "strategy": "plain", **kw}))


async def test_reads_on_new_namespaces_create_no_tables(server, home):
    async with Client(server) as c:
        await remember(c)
        assert server.runtime.curation.wait_idle(120)
        before = folders(home)
        for k in range(20):
            ns = f"never-written-{k}"
            for strategy in ("plain", "auto", "wiki", "workspace", "hybrid"):
                await c.call_tool("recall", {"query": "vault code", "namespace": ns,
                                             "strategy": strategy})   # an answer or an error
            await c.call_tool("explain", {"id": "rcl_0123456789abcdef0123", "namespace": ns})
            try:
                await c.read_resource(f"trimem://{ns}/wiki/index")
            except Exception:   # noqa: BLE001 - an error is a fine answer; a new table is not
                pass
        after = folders(home)
    print(f"reads on 20 new namespaces: {len(after - before)} new table folders")
    assert after == before


async def test_forget_scrubs_the_recall_records_that_quoted_a_forgotten_secret(server, home):
    async with Client(server) as c:
        # too long for the budget: the recall ranks it (its trace names it) but does not quote it
        await remember(c, text=f"My vault passphrase is {SECRET}, keep it quiet. " + "x" * 400)
        await remember(c, ref="p2", text="The vault is in the canal office.")
        rec = await recall(c, f"what is the vault passphrase {SECRET}?", budget_tokens=60)
        assert rec["sources"] and SECRET not in rec["context"]
        assert payload(await c.call_tool("explain", {"id": rec["recall_id"], "namespace": "main"}))
        out = payload(await c.call_tool("forget", {"refs": ["p1"], "namespace": "main"}))
        assert out["removed_recalls"] >= 1
        error_text(await c.call_tool("explain", {"id": rec["recall_id"], "namespace": "main"}))
    assert on_disk(home, SECRET) == []


async def test_forget_removes_recall_records_by_id_by_time_and_all(server):
    async with Client(server) as c:
        await remember(c)
        r1, r2 = (await recall(c, "vault code"))["recall_id"], (await recall(c, "code"))["recall_id"]
        out = payload(await c.call_tool("forget", {"namespace": "main", "recall_ids": [r1]}))
        assert out["removed_recalls"] == 1 and out["removed_sources"] == 0

        async def known(rid: str) -> bool:
            return not (await c.call_tool("explain", {"id": rid, "namespace": "main"})).is_error

        assert not await known(r1) and await known(r2)
        cut = datetime.now(timezone.utc).isoformat()
        time.sleep(0.05)
        r3 = (await recall(c, "vault"))["recall_id"]
        out = payload(await c.call_tool("forget", {"namespace": "main", "recalls_before": cut}))
        assert out["removed_recalls"] == 1 and not await known(r2) and await known(r3)
        out = payload(await c.call_tool("forget", {"namespace": "main", "all_recalls": True}))
        assert out["removed_recalls"] == 1 and not await known(r3)
        assert (await recall(c, "vault code"))["context"]   # the memory itself is untouched


async def test_the_recall_log_is_bounded_in_count_age_and_trace_size(tmp_path):
    home = tmp_path / "home"
    server = build_server(Settings(home=str(home), curation=False,
                                   recall_log_max=5, recall_trace_max_bytes=4096,
                                   recall_log_days=2 / 86400))
    async with Client(server) as c:
        for k in range(40):
            await remember(c, ref=f"m{k}", text=f"Note {k}: the vault code changes every week.")
        ids = [(await recall(c, "vault code", budget_tokens=100_000))["recall_id"]
               for _ in range(12)]
    sp = server.runtime.space("main")
    kept = [i for i in ids if _has(sp, i)]
    assert len(kept) <= 5 and kept == ids[-len(kept):], kept
    sizes = [sp.log.get_recall(i).trace_bytes for i in kept]   # as stored
    print(f"recall log: 12 recalls at 100k tokens, {len(kept)} kept, traces {max(sizes)} bytes max")
    assert max(sizes) <= 4096 * 1.1
    time.sleep(2.5)   # older than the retention: the next log prunes them
    async with Client(server) as c:
        await recall(c, "vault code")
    assert not any(_has(sp, i) for i in kept)


def _has(space, rid: str) -> bool:
    from trimem.storage import NotFound

    try:
        space.log.get_recall(rid)
        return True
    except NotFound:
        return False
