"""The store's RAM budget (``storage/budget.py``): the in-process copies of several namespaces
share one bound, the least recently used copy goes first, a copy too big for the bound is not
kept, and LanceDB answers in its place with the same results; LanceDB's caches get their share."""

from __future__ import annotations

import time

import numpy as np

from trimem.storage import open_store
from trimem.storage.budget import INDEX_SHARE, METADATA_SHARE, MB

from source_rows import DIM, FILTERS, turn_rows


def spaces(home, max_ram_mb: float | None, names=("a", "b")):
    kw = {} if max_ram_mb is None else {"max_ram_mb": max_ram_mb}
    store = open_store(home, vector_index_min_rows=10_000, source_copy_max_rows=10_000, **kw)
    out = []
    for n in names:
        sp = store.space(n)
        sp.bind_model("m", DIM, lambda texts: np.ones((len(texts), DIM), np.float32))
        out.append(sp)
    return store, out


def same_answers(sp, ref, q) -> None:
    for flt in FILTERS:
        a, b = sp.sources.vector_search(q, 50, flt), ref.sources.vector_search(q, 50, flt)
        assert [i for i, _ in a] == [i for i, _ in b], flt
        assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-5)
    ids = ["src_0003", "missing", "src_0119", "src_0010"]
    assert sp.sources.get(ids) == ref.sources.get(ids)
    va, vb = sp.sources.vectors(ids), ref.sources.vectors(ids)
    assert va.keys() == vb.keys() and all(np.array_equal(va[i], vb[i]) for i in va)


def test_namespaces_share_one_bound_and_answer_as_without_it(tmp_path):
    _, (a, b) = spaces(tmp_path, None)   # the default budget: both copies are kept
    a.sources.add(turn_rows(120))
    b.sources.add(turn_rows(120, seed=1))
    assert a.sources._snapshot() is not None and b.sources._snapshot() is not None
    one = a.sources._snapshot().nbytes
    # room for one copy, not two: the budget's share for copies is 60 % of it
    store, (sa, sb) = spaces(tmp_path, 1.5 * one / (1 - INDEX_SHARE - METADATA_SHARE) / MB)
    copies = store.budget.copies
    q = np.random.default_rng(5).standard_normal(DIM)
    assert sa.sources._snapshot() is not None and copies.used <= copies.limit
    assert sb.sources._snapshot() is not None and copies.used <= copies.limit
    assert sa.sources._snap._state is None            # dropped for b's copy: least recently used
    same_answers(sa, a, q)                           # loaded again, and b dropped
    assert sb.sources._snap._state is None and copies.used <= copies.limit
    same_answers(sb, b, q)
    assert copies.used <= copies.limit


def test_a_copy_past_the_bound_is_not_kept_and_lancedb_answers_alike(tmp_path):
    _, (ref,) = spaces(tmp_path, None, names=("a",))
    ref.sources.add(turn_rows(200))
    store, (tiny,) = spaces(tmp_path, 0.05, names=("a",))   # 31 kB for copies
    assert ref.sources._snapshot() is not None and tiny.sources._snapshot() is None
    assert store.budget.copies.used == 0
    q = np.random.default_rng(9).standard_normal(DIM)
    same_answers(tiny, ref, q)
    tiny.sources.add(turn_rows(10, start=200))       # still too big: nothing loaded, nothing kept
    assert tiny.sources._snapshot() is None and store.budget.copies.used == 0
    time.sleep(1.1)   # the other store's handle sees the write within its 1 s interval
    same_answers(tiny, ref, q)


def test_lancedb_caches_get_their_share(tmp_path):
    store, (sp,) = spaces(tmp_path, 0.2, names=("a",))
    sp.sources.add(turn_rows(600))
    assert sp.sources._snapshot() is None                    # past the bound: LanceDB answers
    sp.sources.vector_search(np.ones(DIM, np.float32), 10)
    sp.sources.fts_search("turn", 10)
    b = store.budget
    assert b.index_cache == int(0.2 * MB * INDEX_SHARE)
    assert b.metadata_cache == int(0.2 * MB * METADATA_SHARE)
    assert 0 < b.lance_bytes() <= b.index_cache + b.metadata_cache
