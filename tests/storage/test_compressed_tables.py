"""The memories and the strategies' derived tables keep their strings and bytes zstd-compressed
on disk (``schema.compressed``); a table an earlier version created gets the compression at its
next write and reads back the same."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from trimem.storage import open_store
from trimem.storage.schema import ZSTD, memories_schema, uncompressed_columns

DIM = 8
SCHEMA = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("state", pa.string()),
                    ("keys", pa.list_(pa.string())), ("sum", pa.binary())])


def _rows(n: int) -> list[dict]:
    """Rows shaped like a wiki group's: a JSON state of claim lines, its keys, a float64 sum."""
    lines = [[f"2024-0{k % 9 + 1}-1{k % 10}", f"clm_{k:08x}", f"- Ana: went to the lake {k} [r{k}]"]
             for k in range(40)]
    return [{"id": f"g{i}", "state": json.dumps({"act": lines[i % 7:], "n_act": i}),
             "keys": [f"entity|ana{i % 5}", "topic|outdoors"],
             "sum": (np.arange(DIM, dtype=np.float32) * (i + 1) / 7).astype("<f8").tobytes()}
            for i in range(n)]


def _bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _table_dir(home: Path, kind: str) -> Path:
    return next(p for p in home.iterdir() if f"__{kind}" in p.name)


def _settled_bytes(home: Path, kind: str, old_table: bool) -> tuple[int, list[dict]]:
    store = open_store(home)
    sp = store.space("n")
    sp.bind_model("m", DIM, lambda texts: np.ones((len(texts), DIM), np.float32))
    rows = _rows(300)
    if old_table:   # as an earlier version created it: no compression set on any column
        tbl = sp.table(kind, SCHEMA, create=True)
        tbl.add([dict(r, namespace="n") for r in rows[:100]])
        assert uncompressed_columns(tbl.schema) == ["id", "namespace", "state", "keys", "sum"]
    sp.derived.upsert(kind, SCHEMA, [dict(r) for r in rows])
    meta = {f.name: {k.decode(): v.decode() for k, v in (f.metadata or {}).items()}
            for f in sp.derived.table(kind).schema}
    assert all(meta[c] == ZSTD for c in ("id", "state", "keys", "sum"))
    sp.upkeep.optimize(purge=True)
    got = sorted(sp.derived.rows(kind), key=lambda r: int(r["id"][1:]))
    assert store.close(30)
    return _bytes(_table_dir(home, kind)), got


def test_derived_tables_are_compressed_and_an_old_one_is_upgraded_on_its_next_write(tmp_path):
    plain_store = open_store(tmp_path / "plain")
    sp = plain_store.space("n")
    sp.table("things", SCHEMA, create=True).add([dict(r, namespace="n") for r in _rows(300)])
    sp.upkeep.optimize(purge=True)
    assert plain_store.close(30)
    plain = _bytes(_table_dir(tmp_path / "plain", "things"))
    new, rows_new = _settled_bytes(tmp_path / "new", "things", old_table=False)
    old, rows_old = _settled_bytes(tmp_path / "old", "things", old_table=True)
    assert rows_old == rows_new and len(rows_new) == 300
    assert rows_new[3]["state"] == _rows(300)[3]["state"]
    assert new < plain / 2 and old < plain / 2, (plain, new, old)


def test_the_memories_table_is_compressed(tmp_path):
    schema = memories_schema(DIM)
    assert uncompressed_columns(schema) == []
    assert schema.field("vector").metadata is None   # vectors are not zstd-compressed
