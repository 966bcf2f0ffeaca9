"""Scalar indexes on the memories' and the derived tables' filter columns are built once a table
holds ``scalar_index_min_rows`` rows: below that a flat scan is quick, and each index costs tens
of KB on disk whatever the table's size."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from trimem.storage import open_store

SCHEMA = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("key", pa.string())])
COLS = {"id": "btree", "key": "bitmap"}


def _indexed(sp) -> set[str]:
    return {c for ix in sp.derived.table("things").list_indices() for c in ix.columns}


def _index_bytes(home: Path) -> int:
    return sum(p.stat().st_size for p in home.rglob("*")
               if p.is_file() and "_indices" in p.parts)


def test_a_table_gets_its_scalar_indexes_once_it_reaches_the_threshold(tmp_path):
    store = open_store(tmp_path, scalar_index_min_rows=50)
    sp = store.space("n")
    sp.derived.upsert("things", SCHEMA, [{"id": f"t{i}", "key": f"k{i % 3}"} for i in range(49)])
    sp.derived.scalar_indexes("things", COLS)
    assert _indexed(sp) == set() and _index_bytes(tmp_path) == 0
    sp.derived.upsert("things", SCHEMA, [{"id": "t49", "key": "k0"}])
    sp.derived.scalar_indexes("things", COLS)      # the same process: counted again, now built
    assert _indexed(sp) == {"id", "key"} and _index_bytes(tmp_path) > 0
    assert [r["id"] for r in sp.derived.rows("things", where="key = 'k1'", columns=["id"])][:2] == \
        ["t1", "t4"]
    assert store.close(30)


def test_a_forget_rebuilds_the_indexes_a_small_table_already_has(tmp_path):
    """A table indexed by an earlier version, below the threshold: the rebuild after a forget
    rebuilds its indexes (a segment keeps deleted values) and adds none."""
    store = open_store(tmp_path, scalar_index_min_rows=0)
    sp = store.space("n")
    sp.derived.upsert("things", SCHEMA, [{"id": f"t{i}", "key": f"secret{i}"} for i in range(20)])
    sp.derived.scalar_indexes("things", {"key": "btree"})
    assert _indexed(sp) == {"key"}
    store.scalar_index_min_rows = 1000
    sp.derived.delete_rows("things", {"id": "t7"})
    sp.derived.scalar_indexes("things", COLS, rebuild=True)
    assert _indexed(sp) == {"key"}
    sp.upkeep.optimize(purge=True)
    assert not [p for p in tmp_path.rglob("*") if p.is_file() and b"secret7" in p.read_bytes()]
    assert store.close(30)
