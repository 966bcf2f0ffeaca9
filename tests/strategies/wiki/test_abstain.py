"""Answerability of a wiki recall (real LanceDB in a temp folder, real embedder, no mocks): the
recall abstains when the evidence it can find supports the query too little, and the controlled
retry's hint words cannot vouch for the evidence they themselves pulled in."""

import pytest

from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies.base import RecallRequest
from trimem.strategies.wiki import evidence as ev, route
from trimem.strategies.wiki.strategy import WikiStrategy
from trimem.tools.remember import Message, remember

from helpers import WIKI_SESSIONS
from source_rows import source

SESSIONS = WIKI_SESSIONS


@pytest.fixture
def env(home, tmp_path_factory):
    rt = build_server(Settings(home=str(home), curation=False)).runtime
    wiki = WikiStrategy()
    for sid, when, turns in SESSIONS:
        msgs = [Message(content=t, speaker=sp, ref=f"{sid}-{i}") for i, (sp, t) in
                enumerate(turns)]
        remember(rt, msgs, session_id=sid, session_time=when, namespace="default")
        wiki.curate(rt.env("default"), sid)
    return wiki, rt.env("default")


def ask(wiki, env, q):
    return wiki.recall(env, RecallRequest(query=q, budget_tokens=2000))


def test_supported_questions_do_not_abstain(env):
    wiki, e = env
    for q in ("Where did Ana move for her new job?", "What pottery class did Cara start?"):
        out = ask(wiki, e, q)
        final = out.trace["answerability"]["final"]
        assert not out.abstain and final["support"] >= ev.MIN_SUPPORT, (q, final)
        assert out.trace["answerability"]["retry"] is None


def test_an_absent_topic_abstains_even_after_the_retry(env):
    wiki, e = env
    out = ask(wiki, e, "What is the boiling point of liquid nitrogen?")
    ans = out.trace["answerability"]
    assert out.abstain and out.context          # abstains, still returns what it found
    assert ans["retry"] is not None and ans["retry"]["hints"]
    retry = ans["retry"]["sufficiency"]
    # judged on the asked words only (none of them is in memory), not on the hint words, which
    # the evidence they fetched always contains
    assert {"boil", "liquid", "nitrogen"} <= set(retry["missing_terms"])
    assert retry["query_term_cover"] == 0.0
    assert retry["support"] < ev.MIN_SUPPORT


def test_support_is_best_b_plus_cover_against_the_threshold():
    f = route.query_features("Does Rex love the parks?")
    rows = [source(text="Rex loves the big parks in Berlin.", speaker="Ana")]
    chosen = [{"parts": {"b": ev.MIN_SUPPORT - 1.0}}]
    s = ev.sufficiency(f, chosen, rows)
    assert s["query_term_cover"] == 1.0 and s["sufficient"]
    s = ev.sufficiency(f, [{"parts": {"b": ev.MIN_SUPPORT - 1.01}}], rows)
    assert not s["sufficient"] and s["support"] == pytest.approx(ev.MIN_SUPPORT - 0.01)
