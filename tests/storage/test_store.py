"""The store on a real LanceDB folder: escaping, isolation, model switches, schema versions."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
import pytest

from trimem.storage import Session, StorageError, open_store
from trimem.storage.db import namespace_key, sql_str
from trimem.storage.rows import Memory
from trimem.storage.schema import SCHEMA_VERSION


def fake_embed(dim):
    def embed(texts):
        rng = [np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(dim) for t in texts]
        v = np.array(rng, dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)
    return embed


def rows(n, session="s"):
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)
    return [{"id": f"src_{session}_{i}", "session_id": session, "seq": i, "ref": f"r{i}",
             "speaker": "A", "timestamp": now, "text": f"message {i} about apples",
             "metadata": None, "created_at": now, "vector": np.ones(8) / np.sqrt(8)} for i in range(n)]


def test_sql_str_quotes_and_rejects_nul():
    assert sql_str("it's") == "'it''s'"
    assert sql_str("\\") == "'\\'"
    with pytest.raises(ValueError):
        sql_str("a\x00b")


def test_namespace_keys_are_safe_and_distinct():
    names = ["Default", "default", "a/b", "a_b", "a b", "ü", "' OR 1=1 --", "x" * 300]
    keys = [namespace_key(n) for n in names]
    assert len(set(keys)) == len(names)
    assert all(k.replace("_", "").isalnum() for k in keys)


def test_hostile_values_match_nothing_and_break_nothing(tmp_path):
    sp = open_store(tmp_path).space("n")
    sp.bind_model("m", 8, fake_embed(8))
    sp.sources.add(rows(3))
    for evil in ["r1' OR '1'='1", "r1'; --", "' OR true OR '", "r1\\"]:
        assert sp.sources.by_refs([evil]) == []
        assert sp.sources.by_session(evil) == []
    assert [r.ref for r in sp.sources.by_refs(["r1"])] == ["r1"]


def test_switching_the_embedding_model_re_embeds_and_never_mixes(tmp_path):
    store = open_store(tmp_path)
    sp = store.space("n")
    sp.bind_model("model-a", 8, fake_embed(8))
    sp.sources.add(rows(5))
    sp2 = open_store(tmp_path).space("n")
    sp2.bind_model("model-b", 4, fake_embed(4))
    tables = [k for k in sp2.stats() if k.startswith("sources")]
    assert tables == ["sources__model_b_4"]
    got = sp2.sources.vectors([f"src_s_{i}" for i in range(5)])
    assert len(got) == 5 and all(v.shape == (4,) for v in got.values())
    assert {r.embed_model for r in sp2.sources.all()} == {"model-b"}
    assert [a["op"] for a in sp2.log.audit_log()] == ["reembed"]


def test_schema_version_is_recorded_and_newer_data_is_refused(tmp_path):
    store = open_store(tmp_path)
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    store.set_meta("schema_version", str(SCHEMA_VERSION + 1))
    with pytest.raises(StorageError, match="newer than this trimem"):
        open_store(tmp_path)


def test_namespaces_are_separate_tables(tmp_path):
    store = open_store(tmp_path)
    a, b = store.space("a"), store.space("b")
    for sp in (a, b):
        sp.bind_model("m", 8, fake_embed(8))
    a.sources.add(rows(2))
    assert b.sources.count() == 0 and b.sources.fts_search("apples", 10) == []
    assert len(a.sources.fts_search("apples", 10)) == 2
    assert store.namespaces() == ["a"]


def test_unwritable_home_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StorageError, match="cannot create the data folder"):
        open_store(blocker / "home")


def test_derived_rows_filter_on_a_list_column_escapes_the_value(tmp_path):
    import pyarrow as pa

    sp = open_store(tmp_path).space("n")
    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()),
                        ("tags", pa.list_(pa.string()))])
    sp.derived.upsert("tagged", schema, [{"id": "a", "tags": ["x", "it's"]}, {"id": "b", "tags": ["y"]}])
    assert [r["id"] for r in sp.derived.rows("tagged", contains={"tags": "it's"})] == ["a"]
    assert [r["id"] for r in sp.derived.rows("tagged", contains={"tags": "y"}, eq={"id": "b"})] == ["b"]
    assert sp.derived.rows("tagged", contains={"tags": "x') OR true OR ('"}) == []


def test_latest_session_time_is_per_namespace_and_skips_sessions_without_one(tmp_path):
    store = open_store(tmp_path)
    a, b = store.space("a"), store.space("b")
    assert a.sessions.latest_time() is None                      # no sessions table yet
    t1, t2 = (datetime(2024, m, 1, tzinfo=timezone.utc) for m in (3, 5))
    a.sessions.put(Session("s1", t1, curation="done"))
    a.sessions.put(Session("s2", None, curation="done"))
    b.sessions.put(Session("s3", t2, curation="done"))
    assert a.sessions.latest_time() == t1 and b.sessions.latest_time() == t2


def test_nearest_many_equals_one_nearest_per_vector(tmp_path):
    import pyarrow as pa

    store = open_store(tmp_path)
    sp, other = store.space("n"), store.space("m")   # another namespace's rows never show up
    dim = 8
    for x in (sp, other):
        x.bind_model("m", dim, fake_embed(dim))
    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("g", pa.string()),
                        ("vector", pa.list_(pa.float32(), dim))])
    vecs = fake_embed(dim)([f"row {i}" for i in range(40)])
    sp.derived.upsert("things", schema, [{"id": f"r{i}", "g": "ab"[i % 2], "vector": v}
                                 for i, v in enumerate(vecs)])
    other.derived.upsert("things", schema, [{"id": "x", "g": "a", "vector": vecs[0]}])
    queries = list(fake_embed(dim)(["q1", "q2", "q3"]))
    many = sp.derived.nearest_many("things", queries, 5, eq={"g": "a"})
    assert len(many) == 3
    for q, got in zip(queries, many):
        one = sp.derived.nearest("things", q, 5, eq={"g": "a"})
        assert [r["id"] for r in got] == [r["id"] for r in one] and len(got) == 5
        assert all(r["id"] != "x" and int(r["id"][1:]) % 2 == 0 for r in got)
        assert [round(r["similarity"], 5) for r in got] == [round(r["similarity"], 5) for r in one]
    assert sp.derived.nearest_many("things", [], 5) == []


def test_memories_get_scalar_indexes_and_later_rows_are_still_found(tmp_path):
    sp = open_store(tmp_path, scalar_index_min_rows=0).space("n")
    sp.bind_model("m", 8, fake_embed(8))
    emb = fake_embed(8)
    now = datetime(2024, 1, 1, tzinfo=timezone.utc)

    def mem(i, kind):
        return Memory(id=f"mem_{i}", kind=kind, origin="heuristic", session_id="s",
                      timestamp=now, text=f"memory {i}", source_ids=[], refs=[], created_at=now,
                      vector=emb([f"memory {i}"])[0])

    sp.memories.add([mem(0, "episode"), mem(1, "fact")])
    assert {"id_idx", "kind_idx", "status_idx"} <= {ix.name for ix in sp.table("memories").list_indices()}
    sp.memories.add([mem(2, "episode")])                     # after the indexes: unindexed rows
    assert [m.id for m in sp.memories.get(["mem_2", "mem_0", "nope"])] == ["mem_2", "mem_0"]
    found = sp.memories.vector_search("episode", emb(["memory 2"])[0], 5)
    assert found[0][0] == "mem_2" and {i for i, _ in found} == {"mem_0", "mem_2"}
    # ``where``: rows by column values, their vectors only when asked for
    eps = sp.memories.where({"kind": "episode", "id": ["mem_2", "mem_1", "mem_0"]}, vectors=True)
    assert sorted(m.id for m in eps) == ["mem_0", "mem_2"] and all(m.status == "active" for m in eps)
    vec = next(m for m in eps if m.id == "mem_2").vector
    # stored in half precision (storage/schema.py, DERIVED_FLOAT), read back as float32
    assert vec is not None and np.allclose(vec, emb(["memory 2"])[0], atol=1e-3)
    assert all(m.vector is None for m in sp.memories.where({"kind": "fact"}))
    with pytest.raises(ValueError, match="no vector"):   # a row is never stored without one
        sp.memories.add([replace(mem(3, "fact"), vector=None)])


def test_the_calibration_sample_does_not_depend_on_physical_order(tmp_path):
    """The same rows written in a different order (two homes after an export and import end up
    so) give the same sample; a sample drawn by row offset did not."""
    def distinct(n):
        out = rows(n)
        for i, r in enumerate(out):
            v = np.zeros(8)
            v[i % 8], v[(i // 8) % 8] = 1.0, 0.5 + i / 100
            r["vector"] = v / np.linalg.norm(v)
        return out

    homes = []
    for name, order in (("a", 1), ("b", -1)):
        sp = open_store(tmp_path / name).space("n")
        sp.bind_model("m", 8, fake_embed(8))
        batch = distinct(40)[::order]
        for i in range(0, 40, 10):   # four commits: four fragments, in opposite orders
            sp.sources.add(batch[i:i + 10])
        homes.append(sp)
    a, b = (sp.sources.sample_vectors(12) for sp in homes)
    assert a.shape == (12, 8) and np.array_equal(a, b)
    assert homes[0].sources.sample_vectors(12, seed=1).tolist() != a.tolist()   # the seed matters
    assert homes[0].sources.sample_vectors(100).shape == (40, 8)


def test_a_model_bound_table_without_vectors_is_tagged_and_dropped_on_a_model_switch(tmp_path):
    import pyarrow as pa

    from trimem.storage.derived import MODEL_BOUND

    schema = pa.schema([("id", pa.string()), ("namespace", pa.string()),
                        ("sum", pa.binary())], metadata=MODEL_BOUND)
    sp = open_store(tmp_path).space("n")
    sp.bind_model("model-a", 8, fake_embed(8))
    sp.sources.add(rows(1))
    sp.derived.upsert("sums", schema, [{"id": "x", "sum": b"\x00" * 8}])
    assert "sums__model_a_8" in sp.stats()
    fresh = open_store(tmp_path).space("n")          # a reader that never saw the schema
    fresh.bind_model("model-a", 8, fake_embed(8))
    assert [r["id"] for r in fresh.derived.rows("sums")] == ["x"]
    sp2 = open_store(tmp_path).space("n")
    sp2.bind_model("model-b", 4, fake_embed(4))
    assert not [k for k in sp2.stats() if k.startswith("sums")]


def test_reshape_rewrites_a_table_of_other_columns_once(tmp_path):
    import pyarrow as pa

    old = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("a", pa.string()),
                     ("b", pa.string())])
    new = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("ab", pa.string())])
    sp = open_store(tmp_path).space("n")
    sp.derived.upsert("t", old, [{"id": "1", "a": "x'", "b": "y"}, {"id": "2", "a": "", "b": "z"}])
    calls = []

    def convert(r):
        calls.append(r["id"])
        return {"id": r["id"], "ab": r["a"] + r["b"]}

    sp2 = open_store(tmp_path).space("n")
    assert sp2.derived.reshape("t", new, convert) is True
    assert sorted((r["id"], r["ab"]) for r in sp2.derived.rows("t")) == [("1", "x'y"), ("2", "z")]
    assert set(sp2.derived.table("t").schema.names) == {"id", "namespace", "ab"}
    assert sp2.derived.reshape("t", new, convert) is False and sorted(calls) == ["1", "2"]
    assert open_store(tmp_path).space("n").derived.reshape("t", new, convert) is False   # already new
    assert sorted(calls) == ["1", "2"]
