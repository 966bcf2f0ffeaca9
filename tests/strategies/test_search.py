"""The retrieval core: one rank fusion (its order, weights, k) and no other copy of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from trimem.strategies.search import ahead, ranked_lists, rrf

STRATEGIES = Path(__file__).resolve().parents[2] / "strategies"


def test_rrf_scores_weights_and_ranks():
    parts = rrf({"bm25": ["a", "b"], "dense": ["b", "c"]}, k=60, weights={"dense": 2.0})
    assert parts["b"]["score"] == 1 / 62 + 2 / 61
    assert parts["a"] == {"score": 1 / 61, "bm25_rank": 1}
    assert parts["c"] == {"score": 2 / 62, "dense_rank": 2}
    assert list(parts) == ["b", "c", "a"]                     # best first


def test_rrf_ties_keep_first_appearance_and_repeats_count_once():
    # "x" (first list, rank 2) and "y" (second list, rank 2) tie: the earlier list's id first,
    # whatever the ids are called; a repeat within a list keeps its first rank
    parts = rrf({"one": ["a", "x", "a"], "two": ["b", "y"]}, k=10)
    assert list(parts) == ["a", "b", "x", "y"]
    assert parts["a"]["one_rank"] == 1 and parts["a"]["score"] == 1 / 11
    again = rrf({"two": ["b", "y"], "one": ["a", "x"]}, k=10)
    assert list(again) == ["b", "a", "y", "x"]


def test_ranked_lists_give_back_what_was_fused():
    lists = {"bm25": ["a", "b", "c"], "dense": ["c", "d"]}
    parts = rrf(lists, k=20)
    assert ranked_lists(parts, ("bm25", "dense", "content")) == lists | {"content": []}
    assert rrf(ranked_lists(parts, ("bm25", "dense")), k=20) == parts


def test_wiki_keeps_its_sharper_k():
    from trimem.strategies.wiki.scoring import fused_scores

    parts = rrf({"bm25": ["a", "b"], "dense": ["b"]})
    s = fused_scores(parts)
    assert s["b"] == 1.0 and s["a"] == (1 / 21) / (1 / 22 + 1 / 21)


def test_one_rank_fusion_in_the_strategies():
    """No strategy module adds up w / (k + rank) on its own: they all call ``search.rrf`` (auto's
    lift of fresh turns adds one more term at plain's position, ``pos``, to a fused score)."""
    pattern = re.compile(r"[+=]\s*[\w.]+\s*/\s*\(\s*(k|RRF_K)\s*\+\s*(rank|p\[)")
    copies = [str(p.relative_to(STRATEGIES)) for p in STRATEGIES.rglob("*.py")
              if p.name != "search.py" and pattern.search(p.read_text())]
    assert copies == []


def test_once_computes_a_key_once_for_concurrent_askers_and_never_blocks_other_keys():
    import threading
    import time

    from trimem.strategies.search import Once

    once, calls, started = Once(), [], threading.Event()

    def slow():
        calls.append("a")
        started.set()
        time.sleep(0.4)
        return "A"

    out: list[str] = []
    threads = [threading.Thread(target=lambda: out.append(once.get("a", slow))) for _ in range(3)]
    for t in threads:
        t.start()
    assert started.wait(5)
    t0 = time.perf_counter()
    assert once.get("b", lambda: "B") == "B"          # another key: no wait for "a"
    assert time.perf_counter() - t0 < 0.2
    for t in threads:
        t.join(5)
    assert out == ["A", "A", "A"] and calls == ["a"]


def test_once_keeps_no_failure():
    from trimem.strategies.search import Once

    once, n = Once(), []

    def flaky():
        n.append(1)
        if len(n) == 1:
            raise RuntimeError("first try fails")
        return 42

    with pytest.raises(RuntimeError):
        once.get("k", flaky)
    assert once.get("k", flaky) == 42 and once.get("k", flaky) == 42 and len(n) == 2


def test_ahead_runs_in_the_pool_and_never_waits_on_its_own_queue():
    import threading
    from concurrent.futures import ThreadPoolExecutor

    def where():
        return threading.current_thread().name

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pool") as pool:
        assert ahead(pool, where)().startswith("pool")        # a free worker runs it

        def task():   # holds the only worker, then waits for work queued behind itself
            return ahead(pool, where)()
        # without taking the call back this would never end (the queue's one worker is busy)
        assert pool.submit(task).result(timeout=10).startswith("pool")   # ran in the task
        done = threading.Event()
        pool.submit(done.wait, 10)                            # the worker is busy elsewhere
        late = ahead(pool, where)
        assert late() == threading.current_thread().name      # taken back: run by the asker
        done.set()
