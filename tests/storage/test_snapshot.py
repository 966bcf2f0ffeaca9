"""The in-process copy of the sources (``storage/snapshot.py``) answers as LanceDB does, and is
never staler than a query: own writes and forgets at once, another process's within the
connection's consistency interval plus ``CHECK_S``."""

from __future__ import annotations

import time
from dataclasses import FrozenInstanceError
from datetime import datetime, timedelta

import numpy as np
import pytest

from source_rows import DIM, FILTERS, T0, turn_rows
from trimem.storage import SourceFilter, open_store
from trimem.storage.snapshot import CHECK_S


def space(home, max_rows: int):
    sp = open_store(home, vector_index_min_rows=max_rows, source_copy_max_rows=max_rows).space("n")
    sp.bind_model("m", DIM, lambda texts: np.ones((len(texts), DIM), np.float32))
    return sp


def test_the_copy_answers_dense_searches_and_look_ups_as_lancedb_does(tmp_path):
    copy = space(tmp_path, max_rows=10_000)       # served from the copy
    lance = space(tmp_path, max_rows=0)           # past the limit: LanceDB answers
    copy.sources.add(turn_rows(240))
    assert copy.sources._snapshot() is not None and lance.sources._snapshot() is None
    rng = np.random.default_rng(7)
    for q in [np.ones(DIM, np.float32)] + [rng.standard_normal(DIM) for _ in range(8)]:
        for flt in FILTERS:
            for limit in (1, 10, 80, 500):
                a, b = copy.sources.vector_search(q, limit, flt), lance.sources.vector_search(q, limit, flt)
                assert [i for i, _ in a] == [i for i, _ in b], (flt, limit)
                assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
    ids = ["src_0003", "src_0000", "missing", "src_0235", "src_0010"]
    assert copy.sources.get(ids) == lance.sources.get(ids)
    va, vb = copy.sources.vectors(ids), lance.sources.vectors(ids)
    assert va.keys() == vb.keys() and all(np.array_equal(va[i], vb[i]) for i in va)


def test_after_appends_and_deletes_the_copy_still_answers_as_lancedb_does(tmp_path):
    """The copy follows writes incrementally (the rows added since are fetched, the removed
    dropped, the kept arrays reused): its filters and order still agree with LanceDB's, and a
    source without a speaker matches no speaker filter, not even one named "None"."""
    copy = space(tmp_path, max_rows=10_000)
    lance = space(tmp_path, max_rows=0)
    q = np.random.default_rng(3).standard_normal(DIM)
    flts = FILTERS + [SourceFilter(speakers=frozenset({"None"}))]
    batches = [turn_rows(50), turn_rows(40, start=50), turn_rows(30, start=90)]
    for r in batches[1]:
        if r["seq"] % 3 == 0:
            r["speaker"] = None
    for n, rows in enumerate(batches):
        copy.sources.add(rows)
        assert copy.sources._snapshot() is not None
        if n == 1:
            copy.sources.delete(["src_0004", "src_0051", "src_0077"])
        time.sleep(1.1)   # the other store's handle sees these writes within its 1 s interval
        for flt in flts:
            a, b = copy.sources.vector_search(q, 500, flt), lance.sources.vector_search(q, 500, flt)
            assert [i for i, _ in a] == [i for i, _ in b], (n, flt)
    assert not copy.sources.vector_search(q, 500, SourceFilter(speakers=frozenset({"None"})))
    ids = ["src_0004", "src_0051", "src_0052", "src_0119"]
    assert copy.sources.get(ids) == lance.sources.get(ids)
    assert [r.id for r in copy.sources.get(ids)] == ["src_0052", "src_0119"]


def test_own_writes_and_deletes_show_at_once(tmp_path):
    sp = space(tmp_path, max_rows=10_000)
    sp.sources.add(turn_rows(30))
    q = turn_rows(40)[36]["vector"]
    assert sp.sources.vector_search(q, 1)[0][0] != "src_0036"
    sp.sources.add(turn_rows(10, start=30))
    assert sp.sources.vector_search(q, 1)[0][0] == "src_0036"
    assert [r.id for r in sp.sources.get(["src_0036"])] == ["src_0036"]
    sp.sources.delete(["src_0036"])
    assert "src_0036" not in [i for i, _ in sp.sources.vector_search(q, 50)]
    assert sp.sources.get(["src_0036"]) == [] and sp.sources.vectors(["src_0036"]) == {}


def test_a_caller_changing_its_rows_does_not_change_the_copy(tmp_path):
    sp = space(tmp_path, max_rows=10_000)
    sp.sources.add(turn_rows(6))
    first = sp.sources.get(["src_0005"])[0]
    with pytest.raises(FrozenInstanceError):
        first.text = "changed"  # pyright: ignore[reportAttributeAccessIssue]
    assert first.metadata is not None
    first.metadata["n"] = -1
    again = sp.sources.get(["src_0005"])[0]
    assert again.text == "turn 5" and again.metadata == {"n": 5}


@pytest.mark.parametrize("what", ["remember", "forget"])
def test_another_process_writes_reach_the_copy(tmp_path, what):
    """Two stores on one home, as two hosts' servers: the reader's copy follows the writer's
    commits within the connection's consistency interval (1 s) plus ``CHECK_S``."""
    writer, reader = space(tmp_path, 10_000), space(tmp_path, 10_000)
    writer.sources.add(turn_rows(20))
    q = turn_rows(30)[25]["vector"]
    assert reader.sources.vector_search(q, 1)[0][0] != "src_0025"   # the copy is filled now
    if what == "remember":
        writer.sources.add(turn_rows(10, start=20))
        want = lambda: reader.sources.vector_search(q, 1)[0][0] == "src_0025"   # noqa: E731
    else:
        writer.sources.delete(["src_0003"])
        want = lambda: reader.sources.get(["src_0003"]) == []   # noqa: E731
    end = time.monotonic() + 1.0 + CHECK_S + 2.0   # + slack for a loaded machine
    while not want():
        assert time.monotonic() < end, "the reader never saw the other store's commit"
        time.sleep(0.05)


def test_past_the_limit_lancedb_answers(tmp_path):
    sp = space(tmp_path, max_rows=25)
    sp.sources.add(turn_rows(20))
    assert sp.sources._snapshot() is not None
    sp.sources.add(turn_rows(10, start=20))
    assert sp.sources._snapshot() is None
    assert [r.id for r in sp.sources.get(["src_0021"])] == ["src_0021"]
    assert len(sp.sources.vector_search(np.ones(DIM), 100)) == 30


def test_derived_tables_copies_filter_and_search_as_lancedb_does(tmp_path):
    import pyarrow as pa

    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("key", pa.string()),
                        ("tags", pa.list_(pa.string())), ("n", pa.int64()), ("flag", pa.bool_()),
                        ("at", pa.timestamp("us", tz="UTC")),
                        ("vector", pa.list_(pa.float32(), DIM))])
    rows = [{"id": f"p{i}", "key": None if i % 9 == 0 else f"k{i % 4}", "n": i % 3,
             "tags": [f"t{i % 5}", "all"] if i % 6 else [], "flag": i % 2 == 0,
             "at": None if i % 8 == 0 else T0 + timedelta(days=400 * i - 9000, microseconds=i),
             "vector": turn_rows(1, start=i)[0]["vector"]} for i in range(60)]
    copy, lance = space(tmp_path, 10_000), space(tmp_path, 0)
    copy.derived.upsert("pages", schema, rows)
    assert copy.core.table_copy("pages", copy.derived.table("pages")) is not None
    assert lance.core.table_copy("pages", lance.derived.table("pages")) is None
    asks = [dict(eq={"key": "k1"}), dict(eq={"key": ["k1", "k2", "nope"]}), dict(eq={"n": 2}),
            dict(eq={"flag": True, "key": "k0"}), dict(contains={"tags": "t3"}),
            dict(eq={"id": ["p3", "p50", "p1"]}, columns=["id", "key"]), dict(eq={"key": "k'1"}),
            dict(eq={"n": 1}, limit=4), dict(columns=["id", "vector"]), dict(columns=["id", "at"])]
    for ask in asks:
        a, b = copy.derived.rows("pages", **ask), lance.derived.rows("pages", **ask)
        assert a == b and repr(a) == repr(b), ask   # repr: the same tzinfo too
    q = np.random.default_rng(3).standard_normal(DIM)
    for eq in (None, {"key": "k2"}, {"n": 0}):
        a = copy.derived.nearest("pages", q, 7, eq, columns=["id", "key"])
        b = lance.derived.nearest("pages", q, 7, eq, columns=["id", "key"])
        assert [r["id"] for r in a] == [r["id"] for r in b], eq
        # derived vectors are stored as float16 (schema.DERIVED_FLOAT): the copy computes over
        # them in float32, LanceDB in its own precision; the order is the same, the scores agree
        # to within float16's rounding (~1e-4 on a cosine of unit vectors)
        assert np.allclose([r["similarity"] for r in a], [r["similarity"] for r in b], atol=1e-3)
    copy.derived.delete_rows("pages", {"key": "k1"})
    assert copy.derived.rows("pages", eq={"key": "k1"}) == []


def test_a_whole_table_read_column_wise_is_what_rows_returns(tmp_path):
    """``Space.columns`` (a graph snapshot's read of a large table) holds the rows ``rows``
    returns, in the same order, after upserts that replace rows and deletes, from the copy's
    side of the bound and from LanceDB's."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("key", pa.string()),
                        ("tags", pa.list_(pa.string())), ("w", pa.float32()),
                        ("vector", pa.list_(pa.float32(), DIM))])
    names = ["id", "namespace", "key", "tags", "w"]
    for bound in (10_000, 0):
        sp = space(tmp_path / str(bound), bound)
        assert sp.derived.columns("edges", names + ["vector"])[0] == {c: [] for c in names}
        for k in range(3):   # three commits, the later ones replacing some rows of the first
            sp.derived.upsert("edges", schema, [
                {"id": f"e{i}", "key": None if i % 9 == 0 else f"k{(i + k) % 4}", "w": i / 7 + k,
                 "tags": [f"t{i % 5}"] if i % 6 else [], "vector": turn_rows(1, start=i + k)[0]["vector"]}
                for i in range(20 * k, 20 * k + 30)])
        sp.derived.delete_rows("edges", {"key": "k1"})
        rows = sp.derived.rows("edges")
        cols, vecs = sp.derived.columns("edges", names + ["vector"])
        assert len(rows) > 40 and vecs is not None and vecs.dtype == np.float32
        assert [dict(zip(names, v)) for v in zip(*(cols[c] for c in names))] == \
            [{c: r[c] for c in names} for r in rows]
        assert np.array_equal(vecs, np.array([r["vector"] for r in rows], np.float32))
        assert sp.derived.columns("edges", ["id"]) == ({"id": [r["id"] for r in rows]}, None)


def test_a_bulk_writer_reads_lancedb_and_the_next_reader_refreshes(tmp_path, monkeypatch):
    """Curation (``snapshot.bulk``) rewrites the tables it reads: its reads of a stale copy that
    cannot be patched (``test_tablecopy.py``) go to LanceDB, without reloading the whole table; a
    recall after it still sees every write."""
    import pyarrow as pa

    from trimem.storage import snapshot
    from trimem.storage.tablecopy import TableCopy

    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("n", pa.int64()),
                        ("vector", pa.list_(pa.float32(), DIM))])
    sp = space(tmp_path, 10_000)

    def rows(lo, hi):
        return [{"id": f"p{i}", "n": i % 3, "vector": turn_rows(1, start=i)[0]["vector"]}
                for i in range(lo, hi)]

    monkeypatch.setattr(snapshot, "BULK_RELOAD_MAX_ROWS", 5)   # a copy bigger than that
    sp.derived.upsert("pages", schema, rows(0, 20))
    assert len(sp.derived.rows("pages", eq={"n": 1})) == 7          # a copy at this version
    loads = []
    real = TableCopy._load
    monkeypatch.setattr(TableCopy, "_patchable", lambda self, *a: False)   # as after another's commit
    monkeypatch.setattr(TableCopy, "_load",
                        lambda self, *a: loads.append(1) or real(self, *a))
    with snapshot.bulk():
        for lo in (20, 30, 40):                             # write, read, write, read ...
            sp.derived.upsert("pages", schema, rows(lo, lo + 10))
            got = sp.derived.rows("pages", eq={"n": 1})
            assert sorted(r["id"] for r in got) == sorted(f"p{i}" for i in range(lo + 10)
                                                          if i % 3 == 1)
    assert loads == []                                      # LanceDB answered each
    monkeypatch.setattr(snapshot, "BULK_RELOAD_MAX_ROWS", 10_000)
    with snapshot.bulk():                                   # a small copy is reloaded
        sp.derived.upsert("pages", schema, rows(50, 51))
        assert len(sp.derived.rows("pages", eq={"n": 1})) == 17 and loads == [1]
    sp.derived.upsert("pages", schema, rows(51, 52))
    got = sp.derived.rows("pages", eq={"n": 1})                     # at once after: no stale copy
    assert len(got) == 17 and loads == [1, 1]
    q = rows(45, 46)[0]["vector"]
    assert sp.derived.nearest("pages", q, 1, None, columns=["id"])[0]["id"] == "p45"


def test_a_look_begun_before_a_delete_does_not_hide_it(tmp_path, monkeypatch):
    """Another thread (curation, during a forget) reads the table's version, the forget deletes
    and marks the copy, then that thread records its look: the forget's next read must still
    look again, and not serve the row it deleted from the copy."""
    import threading

    sp = space(tmp_path, 10_000)
    sp.sources.add(turn_rows(30))
    q = turn_rows(30)[5]["vector"]
    assert sp.sources.vector_search(q, 1)[0][0] == "src_0005"      # the copy, at this version
    cls = type(sp.sources.table())
    real = cls.version
    read, go = threading.Event(), threading.Event()

    def version(self):
        v = real.fget(self)
        if threading.current_thread().name == "reader":     # its look read the old version
            read.set()
            go.wait(10)
        return v

    monkeypatch.setattr(cls, "version", property(version))
    time.sleep(CHECK_S)                                     # the next use looks at the version
    reader = threading.Thread(target=sp.sources.vector_search, args=(q, 1), name="reader")
    reader.start()
    assert read.wait(10)
    sp.sources.delete(["src_0005"])
    go.set()
    reader.join(10)
    assert "src_0005" not in [i for i, _ in sp.sources.vector_search(q, 50)]
    assert sp.sources.get(["src_0005"]) == []


def test_a_read_during_another_threads_reload_waits_for_the_new_rows(tmp_path, monkeypatch):
    """Another thread (curation) looks at the version after this process's write and starts
    loading the new rows: a read meanwhile must not take that look as proof that the copy it
    holds is current. CI saw recalls answered from the rows of the first remember alone."""
    import threading

    from trimem.storage.snapshot import SourceSnapshot

    sp = space(tmp_path, 10_000)
    sp.sources.add(turn_rows(10))
    q = turn_rows(40)[25]["vector"]
    assert "src_0025" not in [i for i, _ in sp.sources.vector_search(q, 50)]   # the copy: 10 rows
    sp.sources.add(turn_rows(30, start=10))
    real = SourceSnapshot._load
    loading, go = threading.Event(), threading.Event()

    def slow_load(self, tbl, version, old):
        if threading.current_thread().name == "reader":    # it looked, now it reads the rows
            loading.set()
            go.wait(10)
        return real(self, tbl, version, old)

    monkeypatch.setattr(SourceSnapshot, "_load", slow_load)
    reader = threading.Thread(target=sp.sources.vector_search, args=(q, 1), name="reader")
    reader.start()
    try:
        assert loading.wait(10)
        got = []
        mine = threading.Thread(target=lambda: got.append(sp.sources.vector_search(q, 1)))
        mine.start()
        mine.join(0.5)       # it may wait for the reader's load, but must not answer without it
        go.set()
        mine.join(10)
    finally:
        go.set()
        reader.join(10)
    assert got and got[0][0][0] == "src_0025"


@pytest.mark.parametrize("tz", ["UTC", None, "+02:00", "Europe/Berlin"])
def test_timestamp_columns_convert_as_pyarrow_does(tz):
    """The copy's fast conversion of timestamp columns gives pyarrow's own values (tzinfo
    included), nulls, the edge years, times before 1970 and daylight-saving changes among them
    (other zones than UTC go through pyarrow itself)."""
    import pyarrow as pa

    from trimem.storage.snapshot import pylist

    when = [datetime(1, 1, 2), datetime(9999, 12, 30, 23, 59, 59, 999999), None,
            datetime(1969, 12, 31, 23, 59, 59, 1), datetime(2024, 2, 29, 12, 0, 0, 5),
            datetime(2024, 3, 31, 1, 30), datetime(2024, 10, 27, 1, 30)]   # Berlin's clock changes
    col = pa.chunked_array([pa.array(when[:2], pa.timestamp("us", tz=tz)),
                            pa.array(when[2:], pa.timestamp("us", tz=tz))])
    got, want = pylist(col), col.to_pylist()
    assert got == want and [repr(x) for x in got] == [repr(x) for x in want]
    assert pylist(pa.chunked_array([pa.array([None], pa.timestamp("us", tz=tz))])) == [None]


@pytest.mark.parametrize("tz", ["UTC", "+02:00"])
def test_repeated_values_are_shared_and_equal_to_pyarrows(tz):
    """A copy's strings and times that rows repeat are one object each (values, types, tzinfo
    and nulls as pyarrow gives them); a column of distinct values is converted as it is; the RAM
    estimate counts a shared object once per sample."""
    import pyarrow as pa

    from trimem.storage.budget import sample_bytes
    from trimem.storage.snapshot import dicts

    t0 = datetime(2024, 3, 31, 1, 30)
    data = pa.table({
        "id": [f"id_{i}" for i in range(12)],
        "session": pa.chunked_array([["s1", "s1", None, "s2"], ["s1"] * 4 + ["s2"] * 4]),
        "ts": pa.array([t0, None] * 6, pa.timestamp("us", tz=tz)),
        "n": list(range(12)),
        "empty": pa.array([None] * 12, pa.string()),
    })
    got = dicts(data, data.column_names)
    assert got == data.to_pylist()
    assert [repr(r["ts"]) for r in got] == [repr(r["ts"]) for r in data.to_pylist()]
    s1 = [r["session"] for r in got if r["session"] == "s1"]
    assert len(s1) == 6 and all(x is s1[0] for x in s1)
    times = [r["ts"] for r in got if r["ts"] is not None]
    assert all(x is times[0] for x in times)
    assert len({id(r["id"]) for r in got}) == 12
    rows = [{"k": "x" * 1000}] * 32
    assert sample_bytes(rows) < 2 * sample_bytes([{"k": "x" * 1000}])


def test_a_copy_grown_by_appends_is_the_copy_a_whole_read_makes(tmp_path):
    """Appends take the cheap path (the new rows after the old ones in the vectors' spare
    room, norms, positions, columns and speaker codes extended); after each one, and after a
    delete in between (the slower path, which re-establishes the table's order), the copy
    equals one read whole from the same table version."""
    from trimem.storage.snapshot import SourceSnapshot, column, source_mask

    sp = space(tmp_path, max_rows=10_000)
    start, grown = 0, 0
    for n, size in enumerate([40, 3, 25, 1, 60, 7]):
        rows = turn_rows(size, start=start, seed=n)
        if n == 2:
            rows[0]["speaker"] = "a third speaker"
        sp.sources.add(rows)
        start += size
        if n == 3:
            sp.sources.delete(["src_0005", "src_0041"])
        state = sp.sources._snapshot()
        assert state is not None
        source_mask(state, SourceFilter(speakers=frozenset({"user"})))   # speaker codes made
        column(state, "ref")
        assert state.mat is not None and state.inv_norm is not None
        assert state.session is not None and state.ts is not None
        grown += state.made.get("buf") is not None and state.mat.base is state.made["buf"]
        whole = SourceSnapshot("n", 10_000).current(sp.sources.table())
        assert whole is not None and whole.version == state.version
        assert [r.id for r in state.rows] == [r.id for r in whole.rows]
        assert state.rows == whole.rows and state.pos == whole.pos
        assert whole.mat is not None and whole.inv_norm is not None
        assert whole.session is not None and whole.ts is not None
        assert np.array_equal(state.mat, whole.mat) and np.array_equal(state.inv_norm, whole.inv_norm)
        assert list(state.session) == list(whole.session)
        assert np.array_equal(state.ts, whole.ts, equal_nan=True)
        names, codes = state.made["speakers"]
        assert [None if c < 0 else list(names)[c] for c in codes] == [r.speaker for r in whole.rows]
        assert list(column(state, "ref")) == [r.ref for r in whole.rows]
    assert grown >= 3   # the appends after the first read and after the delete's re-read
