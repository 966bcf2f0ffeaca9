"""A lighter store: recall traces hold ids and scores (explain reads the text back by
id, and says when a source has been forgotten since), superseded table versions are deleted
soon after a compaction instead of after LanceDB's seven days."""

from __future__ import annotations

import json
import os
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from mcp import Client

from helpers import payload
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.storage import open_store

pytestmark = pytest.mark.anyio
SECRET = "qx-larch-5521-mothwing"
TURNS = ["Ilse keeps her kayak at the rowing club by the weir.",
         f"The locker code at the club is {SECRET}.",
         "Ilse paddles every Sunday before breakfast.",
         "The weir was rebuilt last spring after the floods."]


def on_disk(home: Path, needle: str) -> list[str]:
    return [str(p) for p in home.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def stored_traces(space) -> list[str]:
    tbl = space.table("recalls")
    return [r["trace"] for r in tbl.search().select(["trace"]).limit(None).to_list()]


async def remember_and_recall(c, query: str) -> dict:
    msgs = [{"content": t, "ref": f"k{i}", "speaker": "Ilse"} for i, t in enumerate(TURNS)]
    payload(await c.call_tool("remember", {"namespace": "main", "session_id": "s1",
                                           "messages": msgs}))
    return payload(await c.call_tool("recall", {"query": query, "namespace": "main",
                                                "strategy": "plain", "budget_tokens": 2000}))


def server_at(home: Path, tmp_path: Path):
    return build_server(Settings(home=str(home), curation=False))


async def test_a_trace_stores_ids_not_text_and_explain_reads_it_back_after_compaction(tmp_path):
    home = tmp_path / "home"
    server = server_at(home, tmp_path)
    async with Client(server) as c:
        rec = await remember_and_recall(c, "where does Ilse keep her kayak?")
        sp = server.runtime.space("main")
        sp.upkeep.optimize()   # compacted (and old versions pruned): the record must survive it
        assert sp.table("recalls").stats()["fragment_stats"]["num_fragments"] == 1
        exp = payload(await c.call_tool("explain", {"id": rec["recall_id"], "namespace": "main"}))
    [trace] = stored_traces(sp)
    assert not [t for t in TURNS if t in trace]      # no message text is copied into the log
    items = exp["record"]["items"]
    assert [i["id"] for i in items] == [i["id"] for i in rec["items"]]
    assert [i["text"] for i in items] == [i["text"] for i in rec["items"]]   # read back by id
    assert exp["record"]["chosen"] and exp["record"]["query"] == "where does Ilse keep her kayak?"
    print(f"stored trace: {len(trace.encode())} bytes for {len(items)} items")


async def test_a_source_forgotten_since_the_recall_shows_as_gone_never_its_text(tmp_path):
    """The record outlives the source here the way it does when another process's forget lands
    after this process logged the recall: explain must not bring the text back."""
    home = tmp_path / "home"
    server = server_at(home, tmp_path)
    async with Client(server) as c:
        rec = await remember_and_recall(c, "what is the locker code at the club?")
        secret_id = next(s["id"] for s in rec["sources"] if SECRET in s["text"])
        sp = server.runtime.space("main")
        sp.sources.delete([secret_id])     # what forget does to the sources table ...
        sp.sources.rebuild_text_index()
        sp.upkeep.optimize(purge=True)            # ... and to the files
        res = await c.call_tool("explain", {"id": rec["recall_id"], "namespace": "main"})
        exp = payload(res)
    text = "".join(getattr(b, "text", "") for b in res.content)
    assert SECRET not in text and SECRET not in json.dumps(exp)
    gone = [i for i in exp["record"]["items"] if i["id"] == secret_id]
    assert gone and gone[0]["text"] is None and "forgotten" in gone[0]["gone"]
    assert "no longer stored" in exp["summary"]
    kept = [i for i in exp["record"]["items"] if i["id"] != secret_id]
    assert kept and all(i["text"] in TURNS for i in kept)
    assert on_disk(home, SECRET) == []


async def test_forget_leaves_the_text_nowhere_in_explain_or_on_disk_after_upkeep(tmp_path):
    home = tmp_path / "home"
    server = server_at(home, tmp_path)
    async with Client(server) as c:
        rec = await remember_and_recall(c, "what is the locker code at the club?")
        for _ in range(3):   # more writes, compactions and versions after the recall
            await c.call_tool("recall", {"query": "kayak", "namespace": "main"})
        sp = server.runtime.space("main")
        assert sp.upkeep.wait(60, flush=True)
        payload(await c.call_tool("forget", {"refs": ["k1"], "namespace": "main"}))
        res = await c.call_tool("explain", {"id": rec["recall_id"], "namespace": "main"})
        assert SECRET not in "".join(getattr(b, "text", "") for b in res.content)
        assert sp.upkeep.wait(60, flush=True)
    assert on_disk(home, SECRET) == []


WORDS = ("harbour lantern copper meadow falcon ribbon quarry violet timber saddle orchard "
         "glacier pepper signal walnut canyon marble thistle beacon willow").split()


def busy_turns(n: int) -> list[dict]:
    """``n`` messages that all share words with a query about the club's boats, so a small
    budget leaves most of them out."""
    return [{"content": f"At the club, boat {k} has a {WORDS[k % 20]} sail and a "
                        f"{WORDS[(k * 7) % 20]} hull; it was painted in week {k}.",
             "ref": f"b{k}", "speaker": "Ilse"} for k in range(n)]


async def test_a_logged_recall_keeps_the_nearest_misses_and_takes_under_4_kb_on_disk(tmp_path):
    """A recall that considered ~150 messages and chose a few: its record lists the chosen ones
    whole and the first 10 left out (with how many there were), and explain gives back every
    returned item as the recall returned it (text and timestamp read back by id)."""
    from trimem.storage.traces import LISTED_MAX

    home = tmp_path / "home"
    server = server_at(home, tmp_path)
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"namespace": "main", "session_id": "s1",
                                               "messages": busy_turns(150)}))
        recs = [payload(await c.call_tool("recall", {
            "query": f"which boat at the club has a {w} sail?", "namespace": "main",
            "strategy": "plain", "budget_tokens": 300})) for w in WORDS[:8]]
        sp = server.runtime.space("main")
        exp = payload(await c.call_tool("explain", {"id": recs[0]["recall_id"],
                                                    "namespace": "main"}))
        sp.upkeep.optimize(purge=True)   # settled: one compacted data file, no older version
    rec, record = recs[0], exp["record"]
    keys = ("id", "kind", "text", "score", "role", "timestamp", "source_ids")
    assert [{k: i[k] for k in keys} for i in record["items"]] == \
        [{k: i[k] for k in keys} for i in rec["items"]]
    assert len(record["left_out"]) == LISTED_MAX < record["left_out_listed"]
    assert record["left_out_listed"] + len(record["chosen"]) == record["considered"]
    folder = next(p for p in home.iterdir() if p.name.endswith("__recalls.lance"))
    on_disk = sum(p.stat().st_size for p in (folder / "data").iterdir())
    per_record = on_disk / len(recs)
    print(f"{len(recs)} recall records: {per_record:.0f} bytes each on disk, "
          f"{record['left_out_listed']} left out, {len(record['left_out'])} kept")
    assert per_record <= 4096


DIM = 8


def vec(i: int) -> np.ndarray:
    v = np.random.default_rng(i).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def test_superseded_versions_are_deleted_soon_after_compaction(tmp_path):
    from datetime import datetime, timezone

    store = open_store(tmp_path, optimize_every_commits=5, optimize_idle_s=0.3)
    sp = store.space("n")
    sp.bind_model("m", DIM, lambda texts: np.stack([vec(len(t)) for t in texts]))
    sp.upkeep.keep_versions = timedelta(seconds=1)
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    for k in range(40):   # 40 commits: 40 versions and fragments before upkeep
        sp.sources.add([{"id": f"src_{k}", "session_id": "s", "seq": k, "ref": f"r{k}",
                         "speaker": "A", "timestamp": now, "text": f"note {k}", "metadata": None,
                         "created_at": now, "vector": vec(k)}])
    folder = next(p for p in tmp_path.iterdir() if p.name.startswith("ns_") and "sources" in p.name)
    manifests = lambda: sum(1 for _ in (folder / "_versions").iterdir())  # noqa: E731
    deadline = time.monotonic() + 60
    while manifests() > 4 and time.monotonic() < deadline:
        time.sleep(0.2)
    # counted while upkeep may still delete files (a later cleanup): os.walk skips what goes
    versions, files = manifests(), sum(len(names) for _, _, names in os.walk(folder))
    print(f"40 commits -> {versions} versions, {files} files left")
    # the newest version and the few an optimize run itself commits (index deltas) remain
    assert versions <= 4 and files < 60 and sp.sources.count() == 40
    assert [h for h, _ in sp.sources.fts_search("note", 100)]   # still searchable
    assert store.close(30)


def test_after_upkeep_a_mostly_rewritten_table_takes_about_its_live_size(tmp_path):
    """Rows replaced (an upsert marks the old copy deleted and writes the new one to a new
    file) leave their old bytes on disk until a compaction rewrites the file and the version
    that used it is deleted: after upkeep the table's data files hold about its live rows."""
    import lancedb
    import pyarrow as pa

    store = open_store(tmp_path / "home", optimize_idle_s=0.3)
    sp = store.space("n")
    sp.upkeep.keep_versions = timedelta(seconds=1)
    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("body", pa.string())])
    rng = np.random.default_rng(7)
    body = lambda: rng.bytes(600).hex()  # noqa: E731 - 1.2 KB that does not compress away
    sp.derived.upsert("things", schema, [{"id": f"t{k}", "body": body()} for k in range(300)])
    for _ in range(4):   # most rows replaced, four times over
        sp.derived.upsert("things", schema, [{"id": f"t{k}", "body": body()} for k in range(0, 300, 2)])
        sp.derived.upsert("things", schema, [{"id": f"t{k}", "body": body()} for k in range(1, 250, 2)])
    assert sp.upkeep.wait(60, flush=True)
    time.sleep(1.5)   # the versions the compaction superseded are now older than keep_versions
    assert sp.upkeep.wait(60, flush=True)
    folder = next(p for p in (tmp_path / "home").iterdir() if p.name.endswith("__things.lance"))
    data = [p.stat().st_size for p in (folder / "data").iterdir()]
    live = sp.derived.table("things").to_arrow()
    fresh = lancedb.connect(str(tmp_path / "fresh")).create_table("t", live)
    fresh_bytes = sum(os.path.getsize(p) for p in (tmp_path / "fresh" / "t.lance" / "data").iterdir())
    print(f"{live.num_rows} live rows: {sum(data)} bytes in {len(data)} data file(s) after "
          f"upkeep; the same rows written once: {fresh_bytes} bytes")
    assert live.num_rows == 300 and len(data) <= 2 and sum(data) <= 1.25 * fresh_bytes
    del fresh
    assert store.close(30)


def test_a_recall_log_an_older_version_made_gets_its_trace_compression(tmp_path):
    """A log table created before the trace column was compressed on disk gets the encoding at
    its next write; the compaction after it rewrites the old records with it."""
    from datetime import datetime, timezone

    import pyarrow as pa

    from trimem.storage.schema import RECALLS, TRACE_ENCODING

    store = open_store(tmp_path)
    sp = store.space("n")
    sp.bind_model("m", DIM, lambda texts: np.stack([vec(len(t)) for t in texts]))
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    sp.sources.add([{"id": "src_0", "session_id": "s", "seq": 0, "ref": "r0", "speaker": "A",
                     "timestamp": now, "text": "note", "metadata": None, "created_at": now,
                     "vector": vec(0)}])
    old = pa.schema([f.remove_metadata() for f in RECALLS])
    sp.table("recalls", old, create=True)
    assert not sp.table("recalls").schema.field("trace").metadata
    assert sp.log.add_recall("rcl_1", "note?", "plain", ["src_0"], {"items": [], "left_out": []})
    sp.log.flush()
    meta = sp.table("recalls").schema.field("trace").metadata
    assert {k.decode(): v.decode() for k, v in meta.items()} == TRACE_ENCODING
    assert sp.log.get_recall("rcl_1").query == "note?"
    assert store.close(30)


def test_the_next_process_deletes_the_versions_a_process_compacted_and_left(tmp_path):
    """A process that compacts and exits before its own cleanup leaves the superseded versions
    (and their files) behind; the next process's upkeep deletes them though it writes nothing."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("body", pa.string())])
    store = open_store(tmp_path / "home")
    sp = store.space("n")
    for k in range(6):
        sp.derived.upsert("things", schema, [{"id": f"t{i}", "body": f"{k} {i}" * 50} for i in range(40)])
    assert sp.upkeep.wait(60, flush=True)   # compacted; its cleanup keeps the younger versions
    assert store.close(30)
    folder = next(p for p in (tmp_path / "home").iterdir() if p.name.endswith("__things.lance"))
    before = sum(1 for _ in (folder / "data").iterdir())
    time.sleep(1.2)
    store = open_store(tmp_path / "home")
    sp = store.space("n")
    sp.upkeep.keep_versions = timedelta(seconds=1)
    assert sp.upkeep.wait(60, flush=True)
    after = sum(1 for _ in (folder / "data").iterdir())
    print(f"data files: {before} left by the writing process, {after} after the next one's upkeep")
    assert before > 1 and after == 1 and len(sp.derived.table("things").list_versions()) == 1
    assert store.close(30)
