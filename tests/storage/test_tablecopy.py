"""A derived table's copy (``storage/tablecopy.py``) patched after this process's own commits
holds what a full read of the table holds, rows, order and vectors; a commit it was not told
about (another process's, a delete by another column) makes it read the table in full."""

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
    # after the delete that matched nothing (a commit that changed no row may have made no
    # version: the copy cannot tell) the copy is read in full, or for curation's reads (bulk)
    # LanceDB answers until the next reader that is not curation reads it
    assert (counted["load"], counted["patch"]) == ((1, 3) if bulk else (2, 4))
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
    sp.derived.delete_rows("pages", {"n": 1})                       # not by id: changed rows unknown
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
