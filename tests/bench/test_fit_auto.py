"""``bench/fit_auto.py``'s models on rankings where only some voters find the evidence."""

from __future__ import annotations

from datetime import datetime, timezone

from source_rows import source

from trimem.storage import Source

from trimem.bench.fit_auto import Scorer, fit, loco

N = 30


def _rows() -> dict[str, Source]:
    return {f"t{i}": source(id=f"t{i}", session_id="s1", seq=i, speaker="user",
                            timestamp=datetime(2023, 5, 1, 10, tzinfo=timezone.utc),
                            text=f"turn number {i} " + "x" * 60)
            for i in range(N)}


def _questions() -> list[tuple[int, dict]]:
    """Per question one gold turn: workspace and wiki rank it first, plain and hybrid last (and
    agree with each other on a wrong turn first), over two conversations of each set."""
    qs = []
    for n, (dset, ns) in enumerate([("a", "a1"), ("a", "a2"), ("b", "b1"), ("b", "b2")] * 3):
        gold = f"t{n}"
        others = [f"t{i}" for i in range(N) if i != n]
        good, bad = [gold, *others], [*others, gold]
        qs.append({"set": dset, "ns": ns, "cat": "c", "kind": "single", "gold": [gold],
                   "ranks": {"plain": bad, "hybrid": bad, "workspace": good, "wiki": good}})
    return list(enumerate(qs))


def test_subset_drops_the_voters_that_bury_the_evidence_and_holds_out():
    sc, qs = Scorer(_rows(), budget_tokens := 60), _questions()
    assert budget_tokens * 4 < N * 70                   # the budget holds only a few turns
    equal = fit(sc, qs, "equal", min_kind=30)
    assert set(equal["weights"]["*"].values()) == {1.0}
    chosen = fit(sc, qs, "subset", min_kind=30)["weights"]["*"]
    assert chosen["plain"] == chosen["hybrid"] == 0.0 and chosen["workspace"] + chosen["wiki"] >= 1
    assert sc.objective(qs, lambda q: chosen, 10.0) == 2.0          # R = H = 1 on both sets
    assert sc.objective(qs, lambda q: equal["weights"]["*"], equal["k"]) < 2.0
    held = loco(sc, qs, "subset", min_kind=30)
    assert held["a"]["R"] == held["b"]["R"] == 1.0
