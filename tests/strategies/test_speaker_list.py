"""The named speakers' own turns, searched apart (``search.search_turns``'s fourth list).

A group chat made up here (three people, a real LanceDB store in a temp folder, the packaged
embedder, messages in through the remember tool's code): two people talk about sport a lot, the
third says once what she plays. A question naming her must rank her turn through a list of her
own turns; a question naming nobody, or everyone, gets no such list.
"""

from __future__ import annotations

import pytest

from trimem.server.settings import Settings
from trimem.strategies.base import RecallRequest
from trimem.strategies.search import search_turns
from trimem.tools.recall import recall
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

TALK = ["The sport I play most is tennis, every single week.",
        "My favourite sport to play is football on Sundays.",
        "I play basketball, it is the sport I love.",
        "Which sport do I play? Volleyball, on the beach.",
        "I play golf, a calm sport for the weekend.",
        "Hockey is the sport I play in winter."]


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    rt = Runtime(Settings(home=str(tmp_path_factory.mktemp("home"))).to_config())
    for n in range(4):
        msgs = []
        for i, t in enumerate(TALK):
            msgs.append(Message(content=t, speaker="Ben"))
            msgs.append(Message(content=f"{t} Session {n}, really.", speaker="Cyd"))
            if i % 3 == 0:   # Ana greets; the others call her "Annie"
                msgs.append(Message(content="Hey, sounds fun.", speaker="Ana"))
                msgs.append(Message(content="Hi Annie, you should come along!", speaker="Ben"))
                msgs.append(Message(content="Thanks, maybe next time.", speaker="Ana"))
        if n == 2:
            msgs.append(Message(content="Twice a week I play squash at the club downtown.",
                                speaker="Ana", ref="squash"))
        remember(rt, msgs, session_id=f"s{n}", session_time=f"2024-0{n + 1}-01T10:00:00")
    assert rt.curation.wait_idle(120)
    yield rt
    rt.close()


def _search(rt, query: str, **kw):
    env = rt.env("default")
    order, parts = search_turns(env, RecallRequest(query=query, budget_tokens=500), 20, **kw)
    rows = {r.id: r for r in env.space.sources.get(order)}
    return order, parts, rows


@pytest.mark.parametrize("query", ["What sport does Ana play?", "What sport does Annie play?"])
def test_a_question_naming_one_person_searches_her_own_turns(rt, query):
    order, parts, rows = _search(rt, query)
    mine = [i for i in order if "speaker_rank" in parts[i]]
    assert mine and {rows[i].speaker for i in mine} == {"Ana"}   # by label or by alias
    best = min(mine, key=lambda i: parts[i]["speaker_rank"])
    assert rows[best].ref == "squash"
    # without the list her one content turn is outranked by the others' sport talk
    off_order, off_parts, _ = _search(rt, query, speaker_w=0)
    assert not any("speaker_rank" in p for p in off_parts.values())
    assert best not in off_order[:order.index(best) + 1], (order.index(best), off_order.index(best) if best in off_order else None)


@pytest.mark.parametrize("query", ["What sport is the best to watch?",
                                   "What sport do Ana, Ben and Cyd talk about?"])
def test_naming_nobody_or_everyone_adds_no_list(rt, query):
    _, parts, _ = _search(rt, query)
    assert not any("speaker_rank" in p for p in parts.values())


def test_plain_recalls_her_turn_at_a_small_budget(rt):
    out = recall(rt, "What sport does Ana play?", "plain", budget_tokens=80)
    assert any(s.ref == "squash" for s in out.sources)
    assert "the named speakers' own turns searched apart" in out.route_reason
    off = recall(rt, "What sport does Ana play?", "plain", budget_tokens=80,
                 options={"speaker_dense": 0})
    assert not any(s.ref == "squash" for s in off.sources)
