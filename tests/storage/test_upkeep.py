"""Upkeep on a real LanceDB folder: idle compaction, the vector index built in a child process
(and rebuilt when the table doubles), racing index creators, a clean close."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import numpy as np
import pytest
from lancedb.index import BTree

from trimem.storage import open_store
from trimem.storage.db import ensure_index

DIM = 16


def vec(i: int) -> np.ndarray:
    v = np.random.default_rng(i).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def rows(start: int, n: int, session: str = "s") -> list[dict]:
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    return [{"id": f"src_{i}", "session_id": session, "seq": i, "ref": f"r{i}", "speaker": "A",
             "timestamp": now, "text": f"note {i} about topic{i % 7}", "metadata": None,
             "created_at": now, "vector": vec(i)} for i in range(start, start + n)]


def space(path, **kw):
    sp = open_store(path, **kw).space("n")
    sp.bind_model("m", DIM, lambda texts: np.stack([vec(len(t)) for t in texts]))
    return sp


def unindexed(sp, column: str) -> int:
    tbl = sp.sources.table()
    ix = next(i for i in tbl.list_indices() if i.columns == [column])
    return tbl.index_stats(ix.name).num_unindexed_rows


def test_vector_index_is_built_in_a_child_process_and_rebuilt_when_the_table_doubles(tmp_path):
    sp = space(tmp_path, vector_index_min_rows=300, optimize_every_commits=10_000,
               optimize_every_rows=10_000_000)
    sp.sources.add(rows(0, 299))
    assert sp.upkeep.wait(60)
    assert not sp.upkeep.has_vector_index(sp.sources.table())        # below the threshold: flat search
    sp.sources.add(rows(299, 1))
    assert sp.upkeep.wait(120)
    tbl = sp.sources.table()
    assert sp.upkeep.has_vector_index(tbl) and sp.upkeep._index_rows["sources"] == 300
    sp.sources.add(rows(300, 200))                      # 500 < 2 x 300: no rebuild
    assert sp.upkeep.wait(120) and sp.upkeep._index_rows["sources"] == 300
    sp.sources.add(rows(500, 100))                      # 600: doubled
    assert sp.upkeep.wait(120) and sp.upkeep._index_rows["sources"] == 600
    # the parent's handle uses the child's index, and it finds the right rows
    hits = sp.sources.vector_search(vec(123), 5)
    assert hits[0][0] == "src_123" and hits[0][1] == pytest.approx(1.0, abs=0.05)
    # a fresh process-level handle sees the same index
    assert space(tmp_path).upkeep.has_vector_index(space(tmp_path).sources.table())


def test_a_failed_index_build_is_logged_and_does_not_fail_the_write(tmp_path, monkeypatch, caplog):
    sp = space(tmp_path, vector_index_min_rows=50)
    monkeypatch.setattr("trimem.storage.upkeep.sys.executable", str(tmp_path / "no-python"))
    sp.sources.add(rows(0, 60))                         # the write succeeds
    assert sp.upkeep.wait(60)
    assert sp.sources.count() == 60 and "vector index" in caplog.text
    assert not sp.upkeep.has_vector_index(sp.sources.table())
    sp.sources.add(rows(60, 10))                        # no retry before the table doubles
    assert not sp.upkeep._index_jobs["sources"].is_alive() and sp.upkeep._index_tried["sources"] == 60


def test_trailing_writes_are_compacted_once_writes_pause(tmp_path):
    sp = space(tmp_path, optimize_every_commits=10_000, optimize_every_rows=10_000_000,
               optimize_idle_s=0.5)
    sp.sources.add(rows(0, 10))                          # creates the indexes (all rows indexed)
    for k in range(5):
        sp.sources.add(rows(10 + 10 * k, 10))
    assert unindexed(sp, "search_text") > 0
    deadline = time.monotonic() + 30
    while unindexed(sp, "search_text") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert unindexed(sp, "search_text") == 0
    assert [h for h, _ in sp.sources.fts_search("topic3", 100)]   # still searchable after compaction


def fragments(sp) -> int:
    return sp.sources.table().stats()["fragment_stats"]["num_fragments"]


@pytest.mark.parametrize("how", ["a write to another table, then a pause", "a flush"])
def test_tables_an_earlier_process_left_uncompacted_are_compacted_by_the_next(tmp_path, how):
    """A process that stops before its idle compaction leaves small fragments and unindexed
    rows; the next one's write counters start at zero, so it looks for such tables itself, once,
    at its first idle moment (or when asked to flush)."""
    first = space(tmp_path, optimize_every_commits=10_000, optimize_every_rows=10_000_000,
                  optimize_idle_s=3600)
    for k in range(6):
        first.sources.add(rows(10 * k, 10))
    first.store.close()
    assert fragments(first) == 6 and unindexed(first, "search_text") > 0
    sp = space(tmp_path, optimize_idle_s=0.2)
    if how == "a flush":
        assert sp.upkeep.wait(60, flush=True)
    else:
        sp.log.audit("test", ["x"], {})
        deadline = time.monotonic() + 30
        while (unindexed(sp, "search_text") or sp.upkeep._optimizing) and time.monotonic() < deadline:
            time.sleep(0.1)
    assert unindexed(sp, "search_text") == 0 and fragments(sp) == 1
    assert len(sp.sources.fts_search("topic3", 100)) == 9   # ids 3, 10, 17, ..., 59
    assert sp.upkeep.wait(60, flush=True) and not sp.upkeep._settle_existing


def test_two_handles_racing_to_index_one_table_both_succeed(tmp_path):
    a, b = open_store(tmp_path), open_store(tmp_path)
    import pyarrow as pa

    schema = pa.schema([("id", pa.string())])
    ta = a.open_table("t", schema)
    ta.add([{"id": "x"}])
    tb = b.open_table("t")
    assert tb is not None
    assert ensure_index(ta, "id", BTree()) is True
    assert ensure_index(tb, "id", BTree()) is False       # stale handle: sees the winner's index
    tb.checkout_latest()
    assert [ix.columns for ix in tb.list_indices()] == [["id"]]


def test_upsert_keeps_the_last_of_duplicate_keys(tmp_path):
    import pyarrow as pa

    sp = space(tmp_path)
    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("v", pa.int64())])
    sp.derived.upsert("edges", schema, [{"id": "e", "v": 1}, {"id": "f", "v": 2}, {"id": "e", "v": 3}])
    assert sorted((r["id"], r["v"]) for r in sp.derived.rows("edges")) == [("e", 3), ("f", 2)]


def test_close_waits_for_upkeep_and_starts_no_more(tmp_path):
    store = open_store(tmp_path, optimize_every_commits=2, optimize_idle_s=0.2)
    sp = store.space("n")
    sp.bind_model("m", DIM, lambda texts: np.stack([vec(len(t)) for t in texts]))
    for k in range(4):
        sp.sources.add(rows(10 * k, 10))
    assert store.close(60)
    assert not sp.upkeep._optimizing and sp.upkeep._idle_thread is None
    sp.sources.add(rows(100, 10))                        # writes still work; no upkeep starts
    assert sp.upkeep._idle_thread is None and not sp.upkeep._optimizing


def test_another_process_cleaning_up_one_table_hides_no_other_from_the_upkeep_check(tmp_path):
    """A process that starts looks once for tables an earlier one left unsettled. Another
    process's version cleanup can delete a manifest of one table while this one lists its
    versions ("Not found"); that table is read again, and the others are checked regardless
    (before, the whole check gave up, and the unsettled sources table went uncompacted)."""
    import threading
    import warnings
    from datetime import timedelta

    import lancedb

    first = space(tmp_path, optimize_every_commits=10_000, optimize_every_rows=10_000_000,
                  optimize_idle_s=3600)
    for k in range(3):
        first.sources.add(rows(10 * k, 10))
    for _ in range(5):
        first.log.audit("test", ["x"], {})
    first.store.close()
    other = lancedb.connect(str(tmp_path))
    audit = other.open_table(next(p.name.removesuffix(".lance") for p in tmp_path.iterdir()
                                  if p.name.endswith("__audit.lance")))
    stop = threading.Event()

    def churn():   # a new version, and every older one deleted, as fast as it goes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)   # "removes every version": the point
            while not stop.is_set():
                audit.delete("1 = 0")
                audit.optimize(cleanup_older_than=timedelta(0))

    worker = threading.Thread(target=churn, daemon=True)
    worker.start()
    sp = space(tmp_path, optimize_idle_s=3600)
    try:
        checks, missed, t0 = 0, 0, time.monotonic()
        while time.monotonic() - t0 < 6:
            missed += "sources" not in sp.upkeep._left_unsettled()
            checks += 1
    finally:
        stop.set()
        worker.join(30)
    assert checks > 20 and missed == 0, (checks, missed)


def test_a_table_dropped_while_it_is_optimized_is_not_reported_as_a_failure(tmp_path, caplog):
    """A model switch in another process drops the old model's sources table while this
    process's upkeep compacts it: LanceDB then fails with "Not found". The table is gone, so
    there is nothing to report; any other failure is still a warning."""
    sp = space(tmp_path, optimize_idle_s=3600)
    for k in range(3):
        sp.sources.add(rows(10 * k, 10))
    name = sp.sources.table().name
    other = open_store(tmp_path).space("n")
    other.bind_model("m2", 8, lambda texts: np.ones((len(texts), 8), np.float32))
    assert name not in sp.store.table_names()   # this process still holds a handle to it
    with caplog.at_level("DEBUG", logger="trimem.storage.upkeep"):
        sp.upkeep._optimize_now("sources", name=name)
    failed = [r for r in caplog.records if r.name == "trimem.storage.upkeep"]
    assert failed and all(r.levelname == "DEBUG" and "dropped" in r.getMessage() for r in failed)
    caplog.clear()
    kept = sp.core.table("audit")
    kept.optimize = lambda **_: (_ for _ in ()).throw(RuntimeError("lance error: disk full"))
    with caplog.at_level("DEBUG", logger="trimem.storage.upkeep"):
        sp.upkeep._optimize_now("audit", name=kept.name)
    assert [r.levelname for r in caplog.records if r.name == "trimem.storage.upkeep"] == ["WARNING"]


def test_a_purge_in_a_background_thread_warns_of_nothing(tmp_path):
    """LanceDB warns that ``cleanup_older_than=0`` removes every old version: a purge means
    it, so that one message is filtered before each such call (a ``catch_warnings`` around
    each call is not thread-safe and let it through from upkeep's threads)."""
    import threading
    import warnings

    from trimem.storage.purge import purge_versions

    sp = space(tmp_path, optimize_idle_s=3600)
    for k in range(3):
        sp.sources.add(rows(10 * k, 10))
    tbl = sp.sources.table()
    with warnings.catch_warnings(record=True) as seen:   # the process's filters as they are
        worker = threading.Thread(target=purge_versions, args=(tbl,))
        worker.start()
        worker.join(60)
    assert not [w for w in seen if "cleanup_older_than" in str(w.message)]
