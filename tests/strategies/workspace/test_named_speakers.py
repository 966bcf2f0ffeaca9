"""Named speakers end to end (real LanceDB in a temp folder, the packaged embedder): a query that
names a speaker finds that speaker's content turn, not the speaker's shortest chit-chat."""

from __future__ import annotations

import numpy as np
import pytest

from trimem.server.settings import Settings
from trimem.strategies.base import RecallRequest
from trimem.strategies.workspace import cache
from trimem.strategies.workspace.localise import _search
from trimem.strategies.options import RecallOptions
from trimem.strategies.workspace.strategy import WorkspaceOptions
from trimem.tools.recall import recall
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

CHAT = ["Wow, cool!", "Haha, yes.", "Nice!", "Oh really?", "Sure thing.", "Good one!"]


@pytest.fixture
def rt(tmp_path, tmp_path_factory):
    rt = Runtime(Settings(home=str(tmp_path / "home")).to_config())
    for n in range(3):
        msgs = []
        for i, t in enumerate(CHAT):
            msgs.append(Message(content=f"I went to a movie with my cousin, part {n}.{i}.",
                                speaker="Bo"))
            msgs.append(Message(content=t, speaker="Ana"))
        if n == 1:
            msgs.append(Message(content="Every Sunday morning I play tennis at the club, it keeps "
                                        "me fit and calm.", speaker="Ana", ref="tennis"))
        remember(rt, msgs, session_id=f"s{n}", session_time=f"2024-0{n + 1}-01T10:00:00")
    assert rt.curation.wait_idle(120)
    return rt


def _fused(rt, strip_names):
    """The fused BM25 + dense candidate order workspace recall starts from."""
    env = rt.env("default")
    query = "What sport does Ana do?"
    s = RecallOptions.parse({"strip_names": strip_names}).of(WorkspaceOptions)
    order, parts = _search(env, RecallRequest(query=query, budget_tokens=500),
                           np.asarray(env.embed_query(query)), 50,
                           cache.snapshot(cache.of(env.ns), env.space), s)
    text = {r.id: r.text for r in env.space.sources.get(order)}
    return [text[i] for i in order], parts[order[0]]


def test_named_speaker_query_ranks_the_content_turn_first(rt):
    ranked, best = _fused(rt, 1)
    assert "tennis" in ranked[0]
    assert "bm25_rank" not in best and best["content_rank"] == 1   # found by what was asked
    # with the name left in, BM25 matches every "Ana: ..." line and ranks her shortest first
    ranked, best = _fused(rt, 0)
    assert "tennis" not in ranked[0] and "content_rank" not in best
    assert ranked[0] in CHAT


def test_named_speaker_query_recalls_the_content_turn(rt):
    out = recall(rt, "What sport does Ana do?", "workspace", budget_tokens=300)
    assert any("tennis" in s.text for s in out.sources)


def test_shared_named_search_matches_workspace_and_serves_wiki(rt):
    """``search.search_turns`` (what plain and wiki search with) ranks like workspace's own
    search, and the search with the name left in does not find the content turn first."""
    from trimem.strategies.search import search_turns

    env = rt.env("default")
    req = RecallRequest(query="What sport does Ana do?", budget_tokens=500)
    text = {r.id: r.text for r in env.space.sources.all()}
    order, parts = search_turns(env, req, 50)
    assert "tennis" in text[order[0]] and parts[order[0]]["content_rank"] == 1
    assert [text[i] for i in order[:5]] == _fused(rt, 1)[0][:5]
    plain_order, _ = search_turns(env, req, 50, names=False)
    assert "tennis" not in text[plain_order[0]]
    out = recall(rt, "What sport does Ana do?", "wiki", budget_tokens=200)
    assert out.sources and "tennis" in out.sources[0].text   # its best turn, first accepted


def test_plain_is_the_fair_baseline_and_searches_named_speakers(rt):
    """plain uses the best single-pass search: the named-speaker one, as workspace and wiki do
    (``strip_names=0`` is the old BM25 + dense search, which ranks Ana's chit-chat first)."""
    out = recall(rt, "What sport does Ana do?", "plain", budget_tokens=60)
    assert out.sources and "tennis" in out.sources[0].text
    assert "speakers it names" in out.route_reason
    old = recall(rt, "What sport does Ana do?", "plain", budget_tokens=60,
                 options={"strip_names": 0})
    assert not any("tennis" in s.text for s in old.sources[:1])


def test_a_ranking_only_ask_returns_the_same_recollection_without_the_unit_trace(rt):
    """auto's vote asks with ``ranking_only``: the same items, context and sources, and none
    of the per-unit trace it would not keep."""
    from helpers import full_and_ranking_only

    full, lean = full_and_ranking_only("workspace", rt.env("default"), "What sport does Ana do?")
    assert "tennis" in lean.context
    assert "chosen" in full.trace and set(lean.trace) == {"timing"}
