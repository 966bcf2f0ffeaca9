"""Evidence scoring: the selected trajectories' turns count only when ``sel_w`` says so."""

from types import SimpleNamespace

import numpy as np

from trimem.strategies.wiki import scoring


def test_selected_trajectories_bring_their_turns_only_with_sel_w():
    q = np.array([1.0, 0.0], dtype=np.float32)
    vecs = {"a": np.array([1.0, 0.0]), "b": np.array([0.9, 0.1]), "c": np.array([0.0, 1.0])}
    maps = SimpleNamespace(t_of={"a": "T1", "b": "T1", "c": "T2"}, s_of={}, inv={},
                           members={"T1": ("a", "b"), "T2": ("c",)})
    parts = {"a": {"score": 1.0, "bm25_rank": 1}, "b": {"score": 0.5, "bm25_rank": 2}}
    f = {"names": [], "facets": [], "list": False}
    vectors = lambda ids: {i: vecs[i] for i in ids}   # noqa: E731
    off, _ = scoring.score_turns(None, q, f, parts, {}, maps, vectors, {"T2"}, 0.0)
    assert "c" not in off                              # T2 is neither searched nor routed
    on, sc = scoring.score_turns(None, q, f, parts, {}, maps, vectors, {"T2"}, 5.0)
    assert on[0] == "c" and sc["parts"]["c"]["sel"] == 1.0
