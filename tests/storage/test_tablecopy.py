"""A derived table's copy (``storage/tablecopy.py``) patched after this process's own commits
holds what a full read of the table holds, rows, order and vectors; a commit it was not told
about (another process's, a delete by another column made while the copy was behind) makes
it read the table in full."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pyarrow as pa
import pytest

from source_rows import DIM, T0
from trimem.storage import open_store, snapshot
from trimem.storage.tablecopy import TableCopy

SCHEMA = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("n", pa.int64()),
                    ("tags", pa.list_(pa.string())), ("at", pa.timestamp("us", tz="UTC")),
                    ("text", pa.string()), ("vector", pa.list_(pa.float32(), DIM))])


def space(home, max_rows: int = 10_000):
    sp = open_store(home, vector_index_min_rows=max_rows).space("n")
    sp.bind_model("m", DIM, lambda texts: np.ones((len(texts), DIM), np.float32))
    return sp


def rows(ids, gen: int) -> list[dict]:
    rng = np.random.default_rng(gen)
    return [{"id": f"p{i}", "n": (i + gen) % 3, "tags": [f"t{gen}"] * (i % 3),
             "at": None if i % 5 == 0 else T0 + timedelta(hours=i + gen),
             "text": f"page {i} v{gen}", "vector": rng.standard_normal(DIM).tolist()}
            for i in ids]


def full_read(home) -> list[dict]:
    """The table as LanceDB returns it to a reader with no copy (another store, limit 0)."""
    return space(home, max_rows=0).derived.rows("pages")


@pytest.fixture
def counted(monkeypatch):
    """How often a copy read its table in full and how often it was patched."""
    calls = {"load": 0, "patch": 0}
    load, patch = TableCopy._load, TableCopy._patch

    def counted_load(self, *a):
        calls["load"] += 1
        return load(self, *a)

    def counted_patch(self, *a):
        got = patch(self, *a)
        calls["patch"] += got is not None
        return got

    monkeypatch.setattr(TableCopy, "_load", counted_load)
    monkeypatch.setattr(TableCopy, "_patch", counted_patch)
    return calls


@pytest.mark.parametrize("bulk", [False, True])
def test_a_copy_patched_after_own_writes_equals_a_full_read(tmp_path, counted, monkeypatch, bulk):
    monkeypatch.setattr(snapshot, "BULK_RELOAD_MAX_ROWS", 5)   # curation's reads patch too
    sp = space(tmp_path)
    sp.derived.upsert("pages", SCHEMA, rows(range(40), 0))
    assert sp.derived.rows("pages") == full_read(tmp_path) and counted["load"] == 1
    steps = [("upsert", [3, 17, 40, 41, 0, 39], 1), ("delete", [5, 6, 41], 0),
             ("upsert", [7, 8], 2), ("upsert", [8, 42, 3], 3), ("delete", ["p_missing"], 0),
             ("upsert", list(range(10, 30)), 4)]
    with snapshot.bulk() if bulk else _nothing():
        for n, (what, ids, gen) in enumerate(steps):
            if what == "upsert":
                sp.derived.upsert("pages", SCHEMA, rows(ids, gen))
            else:
                sp.derived.delete_rows("pages", {"id": [str(i) if isinstance(i, str) else f"p{i}"
                                                        for i in ids]})
            if n == 2:   # two commits before the next read: one patch covers both
                continue
            got = sp.derived.rows("pages")
            assert got == full_read(tmp_path), (what, ids)
            assert [r["id"] for r in sp.derived.rows("pages", eq={"n": 1})] == \
                [r["id"] for r in full_read(tmp_path) if r["n"] == 1]
    # every commit patched, the delete that matched nothing too (its version was looked at
    # before it: it made one, and changed no row)
    assert (counted["load"], counted["patch"]) == (1, 5)
    q = rows([8, 42, 3], 3)[1]["vector"]
    assert sp.derived.nearest("pages", np.asarray(q), 1, None, columns=["id"])[0]["id"] == "p42"


def test_a_commit_the_copy_was_not_told_about_makes_it_read_in_full(tmp_path, counted):
    sp, other = space(tmp_path), space(tmp_path)
    sp.derived.upsert("pages", SCHEMA, rows(range(20), 0))
    assert len(sp.derived.rows("pages")) == 20 and counted["load"] == 1
    other.derived.upsert("pages", SCHEMA, rows([1, 2, 50], 1))     # another process's commit
    sp.derived.upsert("pages", SCHEMA, rows([3], 2))                # then this one's
    assert sp.derived.rows("pages") == full_read(tmp_path)
    assert counted["load"] == 2 and counted["patch"] == 0
    other.derived.upsert("pages", SCHEMA, rows([5], 4))             # the copy is behind, so
    sp.derived.delete_rows("pages", {"n": 1})                       # what this delete took is unknown
    assert sp.derived.rows("pages") == full_read(tmp_path)
    assert counted["load"] == 3 and counted["patch"] == 0
    sp.derived.upsert("pages", SCHEMA, rows([4, 60], 3))            # by id again: patched
    assert sp.derived.rows("pages") == full_read(tmp_path)
    assert counted["load"] == 3 and counted["patch"] == 1


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("bulk", [False, True])
def test_a_delete_by_another_column_is_patched_from_the_rows_the_copy_holds(
        tmp_path, counted, monkeypatch, bulk):
    """A session's rows replaced as workspace's curation does (delete by a column that is not
    the key, then an upsert, one read after both), and deletes matching a list, a number, a
    missing value and nothing: the copy reads which rows each delete took from its own rows."""
    monkeypatch.setattr(snapshot, "BULK_RELOAD_MAX_ROWS", 5)
    sp = space(tmp_path)
    sp.derived.upsert("pages", SCHEMA, rows(range(30), 0))
    assert sp.derived.rows("pages") == full_read(tmp_path) and counted["load"] == 1
    with snapshot.bulk() if bulk else _nothing():
        for eq, upsert in (({"text": "page 4 v0"}, [4, 31]), ({"n": 2}, []),
                           ({"text": ["page 7 v0", "page 9 v0", "nope"]}, [9, 7, 40]),
                           ({"n": 1, "text": "page 10 v0"}, [])):
            sp.derived.delete_rows("pages", eq)
            if upsert:
                sp.derived.upsert("pages", SCHEMA, rows(upsert, 5))
            assert sp.derived.rows("pages") == full_read(tmp_path), eq
    assert counted["load"] == 1 and counted["patch"] == 4


def test_hybrid_memories_added_replaced_and_deleted_patch_their_copy(tmp_path, counted):
    """The memories' copy after a curation's rows are added, deleted by id, and replaced in one
    commit that deletes the session's other rows of those origins (``replacing``)."""
    from dataclasses import asdict

    from trimem.storage.rows import Memory

    sp = space(tmp_path)

    def mem(i: int, session: str, origin: str = "heuristic", gen: int = 0) -> Memory:
        vec = np.random.default_rng(i + 100 * gen).standard_normal(DIM).astype(np.float32)
        return Memory(id=f"m{i}", kind="fact" if i % 2 else "episode", text=f"memory {i} v{gen}",
                      origin=origin, session_id=session, timestamp=T0, source_ids=[f"s{i}"],
                      refs=[], created_at=T0, vector=vec)

    def read(store) -> list[dict]:
        return [asdict(m) for m in store.memories.where({}, vectors=True)]

    def full() -> list[dict]:
        return read(space(tmp_path, max_rows=0))

    sp.memories.add([mem(i, f"sess{i % 3}") for i in range(12)])
    assert read(sp) == full() and counted["load"] == 1
    sp.memories.add([mem(3, "sess0", gen=1), mem(20, "sess2")])
    assert read(sp) == full()
    sp.memories.delete(["m4", "m5", "nope"])
    assert read(sp) == full()
    sp.memories.add([mem(30, "sess1", "sampled"), mem(7, "sess1", "sampled", gen=2)],
                    replacing={"session_id": ["sess1"], "origin": ["heuristic"],
                               "kind": ["episode", "fact"]})
    got = read(sp)
    assert got == full() and not any(m["session_id"] == "sess1" and m["origin"] == "heuristic"
                                      for m in got)
    assert counted["load"] == 1 and counted["patch"] == 3


def test_the_sessions_copy_is_patched_by_session_id(tmp_path, counted):
    """The sessions table is keyed by ``session_id``: its rows written, claimed, marked and
    deleted by this process patch its copy, which then holds what a full read holds."""
    from trimem.storage import Session

    sp = space(tmp_path)

    def full() -> list[dict]:
        return space(tmp_path, max_rows=0).sessions._rows()   # no copy: LanceDB answers

    for i in range(6):
        sp.sessions.put(Session(f"s{i}", T0 + timedelta(days=i), n_messages=2, curation="queued"))
    assert sp.sessions._rows() == full() and counted["load"] == 1
    assert sp.sessions.claim(Session("s2", T0, n_messages=4, curation="queued"), 2)
    assert sp.sessions._rows() == full() and counted["patch"] == 1
    assert not sp.sessions.claim(Session("s3", T0, n_messages=9), 5)   # refused: no row changed
    assert not sp.sessions.set_curation("s4", "done", 7)              # refused: no row changed
    assert sp.sessions._rows() == full() and counted["load"] == 2   # may have made versions
    assert sp.sessions.set_curation("s1", "done", 2)
    sp.sessions.put(Session("s9", None, n_messages=1, curation="queued"))
    assert sp.sessions._rows() == full()
    sp.sessions.delete(["s0", "s9"])
    assert sp.sessions._rows() == full()
    assert sp.sessions.uncurated() == ["s3", "s4", "s5", "s2"]
    assert counted["load"] == 2 and counted["patch"] == 3


def test_commits_noted_through_one_handle_never_patch_a_copy_read_through_another(tmp_path):
    """A table dropped and made again numbers its versions from the start: the commits a copy
    was told of before must not stand for the new table's versions."""
    sp = space(tmp_path)
    sp.derived.upsert("pages", SCHEMA, rows(range(5), 0))
    assert len(sp.derived.rows("pages")) == 5
    copy = sp.derived.core._copies["pages"]
    for v in range(2, 40):
        copy.wrote(v, frozenset({"p1"}))     # as if noted through the old handle
    other = sp.derived.core.store.open_table(sp.derived.table("pages").name)
    assert other is not None
    copy.current(other)                      # another handle: read in full
    assert copy._deltas == {}


def test_a_copy_without_a_column_serves_the_reads_that_do_not_ask_for_it(tmp_path, counted):
    """A column left out of a copy (a wiki page's text, which only BM25 in LanceDB reads) is
    not held; reads of the other columns are answered from the copy, patched after own writes
    as before, and a read that asks for the column (or for every column) gets it from LanceDB."""
    sp = space(tmp_path)
    sp.derived.omit_from_copy("pages", ["text"])
    sp.derived.upsert("pages", SCHEMA, rows(range(30), 0))
    cols = ["id", "n", "tags", "at"]

    def without_text() -> list[dict]:
        return [{c: r[c] for c in [*cols, "namespace"]} for r in full_read(tmp_path)]

    assert sp.derived.rows("pages", columns=cols) == without_text() and counted["load"] == 1
    held = sp.derived.core._copies["pages"]._state
    assert held is not None and "text" not in held.rows[0] and held.mat is not None
    sp.derived.upsert("pages", SCHEMA, rows([3, 31], 1))
    sp.derived.delete_rows("pages", {"id": ["p4"]})
    assert sp.derived.rows("pages", columns=cols) == without_text()
    assert (counted["load"], counted["patch"]) == (1, 1)
    assert sp.derived.rows("pages") == full_read(tmp_path)             # every column: LanceDB
    assert sp.derived.rows("pages", eq={"id": "p3"}, columns=["id", "text"]) == \
        [{"id": "p3", "namespace": "n", "text": "page 3 v1"}]
    assert [r["id"] for r in sp.derived.rows("pages", eq={"n": 1}, columns=["id"])] == \
        [r["id"] for r in full_read(tmp_path) if r["n"] == 1]
    q = np.asarray(rows([3, 31], 1)[1]["vector"])
    assert sp.derived.nearest("pages", q, 1, None, columns=["id", "text"])[0]["text"] == \
        "page 31 v1"
    assert sp.derived.nearest("pages", q, 1, None, columns=["id"])[0]["id"] == "p31"
    assert (counted["load"], counted["patch"]) == (1, 1)
