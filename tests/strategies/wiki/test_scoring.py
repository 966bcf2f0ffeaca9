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


def test_a_long_reply_is_quoted_for_what_it_matched_not_for_its_neighbours(home):
    """A long write-up in the same exchange as the evidence gets none of the evidence's score
    (a real store, the real embedder): its excerpt would quote what the query is not about,
    so it ranks by its own match, under short turns of other sessions (before, it ranked fifth,
    right under the evidence, for its neighbour's sake, and took a third of the budget)."""
    from trimem.server.app import build_server
    from trimem.server.settings import Settings
    from trimem.strategies.base import RecallRequest
    from trimem.strategies.wiki.strategy import WikiStrategy
    from trimem.tools.remember import Message, remember

    from longtexts import ANSWER    # 5,897 characters about a database migration

    server = build_server(Settings(home=str(home), curation=False))
    rt, wiki = server.runtime, WikiStrategy()
    sessions = [("s0", [("user", "Where do we hold the team offsite this spring?"),
                        ("assistant", "The spring offsite is in Porto, at the old tram depot."),
                        ("assistant", ANSWER)])]
    sessions += [(f"s{n}", [("user", what), ("assistant", "Sounds good.")])
                 for n, what in enumerate(["The garden needs water this week.",
                                           "My sister visits in spring.",
                                           "We should repaint the hallway.",
                                           "The car is due for a service.",
                                           "Spring cleaning starts Monday.",
                                           "The team lunch moved to Thursday."], start=1)]
    for n, (sid, turns) in enumerate(sessions):
        remember(rt, [Message(content=t, speaker=sp, ref=f"{sid}-{i}")
                      for i, (sp, t) in enumerate(turns)],
                 session_id=sid, session_time=f"2026-03-{n + 1:02d}T10:00:00", namespace="default")
        wiki.curate(rt.env("default"), sid)
    out = wiki.recall(rt.env("default"),
                      RecallRequest(query="Where is the spring offsite?", budget_tokens=200))
    quoted = [s.ref for s in out.sources]
    assert quoted[:2] == ["s0-0", "s0-1"] and "Porto" in out.context    # the evidence first
    assert "s0-2" not in quoted and len(quoted) >= 10     # the short turns, not the write-up
