"""Hybrid names what it curates by content and position, not at random: the same session
curated in two homes (an export imported elsewhere) gets the same ids, so searches that break
score ties by id rank its memories alike; a host's model answering the same curation twice
leaves one copy of each row."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

from trimem.strategies.hybrid.items import Episode, Fact
from trimem.strategies.hybrid.store import build_rows

NOW = datetime(2024, 5, 1, tzinfo=timezone.utc)
EPISODES = [Episode(title="t", summary="s", details="they planned the trip", timestamp=None,
                   source_ids=["src_1", "src_2"], refs=["r1", "r2"])]
TUPLES = [Fact(subject="A", relation="plans", object="a trip", context="c",
               source_ids=["src_1"], refs=["r1"], text="A plans a trip"),
          Fact(subject="A", relation="plans", object="a trip", context="c",
               source_ids=["src_1"], refs=["r1"], text="A plans a trip")]


def test_the_same_curation_gets_the_same_ids_and_twins_stay_apart():
    a = build_rows(EPISODES, TUPLES, "s1", NOW, "heuristic", NOW)
    b = build_rows(EPISODES, TUPLES, "s1", NOW, "heuristic", datetime.now(timezone.utc))
    assert [r.id for r in a] == [r.id for r in b]
    assert len({r.id for r in a}) == 3            # two equal tuples at two positions
    other = build_rows(EPISODES, TUPLES, "s2", NOW, "heuristic", NOW)
    sampled = build_rows(EPISODES, TUPLES, "s1", NOW, "sampled", NOW)
    assert not {r.id for r in a} & ({r.id for r in other} | {r.id for r in sampled})


def test_a_second_identical_sampled_curation_keeps_one_copy(server):
    from trimem.strategies.hybrid.store import replace_session, session_rows
    from trimem.tools.remember import Message, remember

    rt = server.runtime
    out = remember(rt, [Message(content="We will plan the trip to the coast.", speaker="user",
                                ref="r1"),
                        Message(content="Great, the coast it is.", speaker="assistant", ref="r2")],
                   "s1", None, "default")
    rt.curation.wait_idle()   # the heuristic curation first, as a host's answer comes later
    env = rt.env("default")
    eps = [replace(EPISODES[0], source_ids=out.source_ids)]
    tps = [replace(TUPLES[0], source_ids=out.source_ids[:1])]
    first = replace_session(env, "s1", eps, tps, "host-model")
    again = replace_session(env, "s1", eps, tps, "host-model")
    rows = session_rows(env.space, "s1")
    assert first["added"] == 2 and again["origin"] is None   # a sampled session is kept as is
    assert sorted(r.origin or "" for r in rows) == ["sampled", "sampled"]
