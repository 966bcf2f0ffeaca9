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
    def vectors(ids):
        found = [i for i in ids if i in vecs]
        return found, np.stack([vecs[i] for i in found])
    # no store: the turns' vectors come from ``vectors``, so the space is never read
    off, _ = scoring.score_turns(None, q, f, parts, {}, maps, vectors, {"T2"}, 0.0)  # pyright: ignore[reportArgumentType]
    assert "c" not in off                              # T2 is neither searched nor routed
    on, sc = scoring.score_turns(None, q, f, parts, {}, maps, vectors, {"T2"}, 5.0)  # pyright: ignore[reportArgumentType]
    assert on[0] == "c" and sc["parts"]["c"]["sel"] == 1.0


def test_the_list_re_rank_picks_what_a_scan_of_every_remaining_turn_picks():
    """``_diversify``'s heap against the plain greedy scan it replaced, ties and long orders
    (past the 250 re-ranked) included."""
    import random
    from collections import defaultdict

    from trimem.strategies.wiki.scoring import W, _diversify

    def scan(order, parts, t_of):
        head, rest = order[:250], order[250:]
        cnt, chosen = defaultdict(int), []
        while head:
            j = max(range(len(head)), key=lambda k: parts[head[k]]["score"]
                    - W["list_red"] * cnt[t_of.get(head[k], head[k])])
            i = head.pop(j)
            chosen.append(i)
            cnt[t_of.get(i, i)] += 1
        return chosen + rest

    rng = random.Random(7)
    for _ in range(200):
        ids = [f"s{i}" for i in range(rng.randint(0, 320))]
        parts = {i: {"score": rng.choice([round(rng.random(), rng.choice([1, 2, 4])), 0.5, 0.52])}
                 for i in ids}
        t_of = {i: f"t{rng.randint(0, rng.choice([1, 3, 20]))}" for i in ids if rng.random() < 0.9}
        assert _diversify(list(ids), parts, t_of) == scan(list(ids), parts, t_of)

