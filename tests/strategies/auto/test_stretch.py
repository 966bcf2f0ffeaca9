"""auto: a turn among other well-ranked turns of its stretch of conversation gains
(``stretch.py``)."""

from __future__ import annotations

import pytest

from source_rows import source

from trimem.strategies.auto.stretch import TOP, lift_stretches

ROWS = {"a": ("s1", 0), "b": ("s1", 2), "c": ("s1", 5), "d": ("s2", 0), "e": ("s1", 60),
        "f": ("s1", 3)}


rows = {i: source(id=i, session_id=sid, seq=seq) for i, (sid, seq) in ROWS.items()}


def test_a_turn_gains_the_best_scores_of_its_stretch():
    fused = [("d", 0.050, {"wiki": 1}), ("e", 0.049, {"wiki": 2}), ("a", 0.040, {"wiki": 3}),
             ("b", 0.030, {"wiki": 4}), ("c", 0.020, {"wiki": 5}), ("f", 0.010, {"wiki": 6}),
             ("zz", 0.005, {"wiki": 7})]
    out, raised = lift_stretches(fused, rows, lift=0.5, window=20)
    # a, b, c, f are one stretch of s1: each gains half of its three best (0.04+0.03+0.02)
    for i in "abcf":
        assert raised[i] == pytest.approx(0.5 * 0.09)
    # d is alone in s2, e is 55+ turns away from the rest of s1: each gains only itself
    assert raised["d"] == pytest.approx(0.025) and raised["e"] == pytest.approx(0.0245)
    assert "zz" not in raised                        # a turn without a row keeps its score
    assert [i for i, _, _ in out] == ["a", "d", "b", "e", "c", "f", "zz"]
    assert dict((i, r) for i, _, r in out)["a"] == {"wiki": 3}   # ranks travel with the turn
    # only the TOP best of a stretch count
    assert TOP == 3 and raised["f"] < 0.5 * (0.04 + 0.03 + 0.02 + 0.01)
    # a narrower window splits the stretch: c (seq 5) no longer reaches a (seq 0)
    _, narrow = lift_stretches(fused, rows, lift=0.5, window=2)
    assert narrow["c"] == pytest.approx(0.5 * (0.02 + 0.01))
    assert narrow["a"] == pytest.approx(0.5 * (0.04 + 0.03))


def test_no_lift_changes_nothing():
    fused = [("a", 0.04, {}), ("b", 0.03, {})]
    assert lift_stretches(fused, rows, lift=0.0) == (fused, {})
    assert lift_stretches([], rows) == ([], {})
