"""Deterministic curation: relative dates, tuples with the speaker as subject, topical episodes."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from helpers import payload
from source_rows import source
from trimem.strategies.hybrid import heuristics as H
from trimem.strategies.hybrid.dates import resolve

THU = datetime(2023, 5, 25, 13, 56, tzinfo=timezone.utc)   # a Thursday


@pytest.mark.parametrize(("text", "expected"), [
    ("I went there yesterday.", "7 May 2023"),
    ("We met today.", "8 May 2023"),
    ("I ran a race last Saturday.", "6 May 2023"),
    ("We go camping next month.", "June 2023"),
    ("I painted it last year.", "2022"),
    ("I moved three days ago.", "5 May 2023"),
    ("It opens in two months.", "July 2023"),
    ("Last month was busy.", "April 2023"),
    ("I fly out next Friday.", "12 May 2023"),
])
def test_relative_dates_resolve_against_the_session_time(text, expected):
    out, dates = resolve(text, datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc))  # a Monday
    assert dates and expected in dates[0]
    assert expected in out and out.startswith(text.split()[0])   # original words are kept


def test_weekday_and_week_phrases():
    _, d = resolve("I ran a charity race last Sunday", THU)
    assert d == ["the Sunday before 25 May 2023, 21 May 2023"]
    _, d = resolve("We are going next week", THU)
    assert d == ["the week after 25 May 2023"]
    assert resolve("no dates in here", THU) == ("no dates in here", [])
    assert resolve("yesterday", None) == ("yesterday", [])


def test_tuples_take_the_speaker_as_subject_and_resolve_dates():
    turn = source(id="x", speaker="Caroline",
                  text="I went to a LGBTQ support group yesterday and it was so powerful. Thanks!")
    tups = H.turn_tuples(turn, "Melanie", datetime(2023, 5, 8, tzinfo=timezone.utc))
    assert len(tups) == 1                      # "Thanks!" carries no content: no tuple
    t = tups[0]
    assert (t.subject, t.relation) == ("Caroline", "went to")
    assert "7 May 2023" in t.object and t.dates == ["7 May 2023"]
    assert t.context == turn.text and t.text.startswith("Caroline went to")
    assert t.source_ids == ["x"]
    other = H.turn_tuples(source(id="y", speaker="Ben",
                                 text="That sounds lovely for your family trip."), "Ana", None)
    assert other and other[0].relation == "said" and "Ana's family" in other[0].text


def test_segments_cut_at_topic_shifts_and_stay_within_bounds():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=16), rng.normal(size=16)
    vecs = np.stack([a + 0.1 * rng.normal(size=16) for _ in range(8)]
                    + [b + 0.1 * rng.normal(size=16) for _ in range(8)])
    segs = H.segment(vecs)
    assert segs[0][0] == 0 and segs[-1][1] == 16
    assert (0, 8) in segs and (8, 16) in segs
    assert all(H.MIN_SEG <= e - s <= H.MAX_SEG for s, e in segs)
    assert H.segment(vecs[:3]) == [(0, 3)] and H.segment(vecs[:0]) == []


@pytest.mark.anyio
async def test_curation_writes_linked_episodes_and_facts(client, server, remember_all):
    await remember_all(client)
    rt = server.runtime
    assert rt.curation.wait_idle(60) and not rt.curation.failures
    space = rt.space("default")
    facts = space.memories.of_kind("fact")
    episodes = space.memories.of_kind("episode")
    assert facts and episodes and {m.origin for m in facts + episodes} == {"heuristic"}
    by_id = {s.id: s for s in space.sources.all()}
    for m in facts + episodes:            # every item keeps the refs of the turns it came from
        assert m.source_ids and all(s in by_id for s in m.source_ids)
        assert m.refs == [by_id[s].ref for s in m.source_ids]
    puppy = next(f for f in facts if "adopted" in f.text)
    assert puppy.body["subject"] == "Ben" and "6 May 2023" in puppy.text
    assert puppy.refs == ["s1:2"]
    s1 = [e for e in episodes if e.session_id == "s1"]
    assert sorted(r for e in s1 for r in e.refs) == sorted(f"s1:{k}" for k in range(1, 7))
    assert all(e.body["title"] and e.body["summary"] and e.body["details"] for e in s1)
    # curation is idempotent: running it again replaces, never duplicates
    from trimem.strategies.hybrid.store import curate

    n = len(space.memories.of_kind("fact"))
    curate(rt.env("default"), "s1")
    assert len(space.memories.of_kind("fact")) == n


@pytest.mark.anyio
async def test_host_curated_memories_take_precedence(client, server):
    msgs = [{"content": "I adopted a cat named Miso yesterday.", "speaker": "Ana", "ref": "h1"},
            {"content": "Miso sleeps all day long on the sofa.", "speaker": "Ana", "ref": "h2"}]
    curated = {"facts": [{"subject": "Ana", "relation": "adopted", "object": "a cat named Miso",
                          "context": "Ana told Ben", "refs": ["h1"]}],
               "episodes": [{"title": "Miso", "summary": "Ana adopted Miso.", "refs": ["h1", "h2"]}]}
    payload(await client.call_tool("remember", {"messages": msgs, "session_id": "h",
                                                "curated": curated}))
    rt = server.runtime
    assert rt.curation.wait_idle(60)
    rows = [m for m in rt.space("default").memories.of_kind("fact") +
            rt.space("default").memories.of_kind("episode") if m.session_id == "h"]
    assert len(rows) == 2 and {m.origin for m in rows} == {"host"}
