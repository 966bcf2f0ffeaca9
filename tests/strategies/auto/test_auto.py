"""``auto``: query kinds, weighted rank fusion, and the fused recall end to end over MCP."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import datetime

import pytest
from mcp import Client

from helpers import payload
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.storage import SourceFilter
from trimem.strategies.auto.features import features
from trimem.strategies.auto.fusion import fuse

pytestmark = pytest.mark.anyio

SESSIONS = [
    ("s1", "2023-03-04T10:00:00", [
        ("Ana", "I adopted a puppy last week, his name is Biscuit."),
        ("Ben", "Lovely! Is he a beagle?"),
        ("Ana", "Yes, a beagle. He loves long walks by the river."),
        ("Ben", "I started pottery classes in Porto on Tuesdays."),
    ]),
    ("s2", "2023-05-20T18:30:00", [
        ("Ben", "We visited Lisbon and then Seville for my birthday."),
        ("Ana", "Biscuit chewed my running shoes again."),
        ("Ben", "My pottery teacher says my bowls are getting better."),
        ("Ana", "I signed up for the city marathon in October."),
    ]),
    ("s3", "2023-08-02T09:15:00", [
        ("Ana", "Training for the marathon is going well, 30 km yesterday."),
        ("Ben", "I sold my first pottery bowl at the Porto market!"),
        ("Ana", "Biscuit is two now; we celebrated with a dog cake."),
        ("Ben", "Next month I fly to Madrid for a conference."),
    ]),
]


async def remember_all(c) -> None:
    for sid, when, lines in SESSIONS:
        msgs = [{"content": t, "speaker": who, "ref": f"{sid}:{i}"} for i, (who, t) in enumerate(lines)]
        payload(await c.call_tool("remember", {"messages": msgs, "session_id": sid,
                                               "session_time": when}))


@pytest.mark.parametrize("query,kind", [
    ("When did Ana adopt Biscuit?", "temporal"),
    ("What did Ben do on 20 May, 2023?", "temporal"),
    ("Would Ben enjoy a ceramics fair?", "hypothetical"),
    ("Which cities has Ben visited?", "list"),
    ("How many bowls did Ben sell?", "list"),
    ("What does Ana think about Ben's pottery?", "multi"),
    ("What is the name of the puppy?", "single"),
])
def test_query_kinds(query, kind):
    assert features(query)["kind"] == kind


def test_fusion_rewards_agreement_respects_weights_and_dedupes():
    ranks = {"a": ["x", "y", "z", "x"], "b": ["z", "q"], "c": ["q"]}
    out = fuse(ranks, {"a": 1.0, "b": 1.0, "c": 0.0}, k=1.0)
    ids = [i for i, _, _ in out]
    assert ids[0] == "z"                         # second in a, first in b: agreement wins
    assert len(ids) == len(set(ids)) == 4        # one entry per source
    q = next(r for i, _, r in out if i == "q")
    assert q == {"b": 2}                         # a zero-weight strategy does not vote
    heavy = [i for i, _, _ in fuse(ranks, {"a": 3.0, "b": 1.0}, k=1.0)]
    assert heavy[0] == "x"                       # a heavier strategy's top turn leads


async def test_without_curated_memory_auto_answers_with_plain(home, tmp_path_factory):
    server = build_server(Settings(home=str(home), curation=False))
    async with Client(server) as c:
        await remember_all(c)
        out = payload(await c.call_tool("recall", {"query": "What is the puppy called?"}))
    assert out["route_reason"].startswith("auto → plain: no curated memory")
    assert "s1:0" in {s["ref"] for s in out["sources"]}


async def test_auto_fuses_the_curated_strategies_and_explains_the_route(client, server):
    await remember_all(client)
    assert server.runtime.curation.wait_idle(120)
    out = payload(await client.call_tool("recall", {"query": "Which cities has Ben visited?",
                                                    "budget_tokens": 300}))
    reason = out["route_reason"]
    assert reason.startswith("auto → fusion of ") and "reads as list" in reason
    assert out["tokens"] <= 300
    ids = [s["id"] for s in out["sources"]]
    assert len(ids) == len(set(ids)) and all(s["text"] in out["context"] for s in out["sources"])
    assert {"s2:0", "s3:3"} & {s["ref"] for s in out["sources"]}
    # the session of the best turn opens the context (most useful evidence first)
    first = out["sources"][0]["timestamp"][:10]
    assert out["context"].split("\n")[1].startswith(f"[{first}")
    rec = payload(await client.call_tool("explain", {"id": out["recall_id"]}))["record"]
    route = rec["route"]
    assert route["kind"] == "list" and len(route["weights"]) >= 2
    assert set(rec["strategies"]) == set(route["weights"])
    assert [c["id"] for c in rec["chosen"]] == [i["id"] for i in out["items"]]
    assert all(c["ranks"] and set(c["ranks"]) <= set(route["weights"]) for c in rec["chosen"])
    # the voters are the strategies the fit gives a weight (fitted.py, kind "*" here)
    from trimem.strategies.auto.strategy import fitted_for

    assert set(route["weights"]) == {s for s, w in fitted_for(300)["weights"]["*"].items() if w}
    # the one dense search of the query was run once and shared by every voter
    assert rec["shared"]["vector"] >= len(route["weights"])
    assert all(rec["strategies"][s]["ms"] >= 0 for s in rec["strategies"])


async def test_a_session_awaiting_curation_is_reachable_through_plain(client, server):
    """Even where the fit gives plain no vote, turns of a session not yet curated are found."""
    await remember_all(client)
    assert server.runtime.curation.wait_idle(120)
    server.runtime.curation.stop()      # the next session stays `queued` on disk
    msgs = [{"content": "My new kayak is bright orange and called Mango.", "speaker": "Ana",
             "ref": "s4:0"}]
    payload(await client.call_tool("remember", {"messages": msgs, "session_id": "s4",
                                                "session_time": "2023-09-01T10:00:00"}))
    q = {"query": "What is the name of Ana's kayak?", "budget_tokens": 1000}
    out = payload(await client.call_tool("recall", q))
    assert "s4:0" in {s["ref"] for s in out["sources"]}
    assert "1 session(s) await curation" in out["route_reason"]
    rec = payload(await client.call_tool("explain", {"id": out["recall_id"]}))["record"]
    assert rec["route"]["uncurated_sessions"] == 1 and rec["route"]["weights"]["plain"] >= 1.0


async def test_shared_turn_search_answers_exactly_as_the_namespace_would(client, server):
    from trimem.strategies.base import RecallRequest
    from trimem.strategies.search import TurnSearch

    await remember_all(client)
    env = server.runtime.env("default")
    q = "Where does Ben do pottery?"
    qv = env.embed_query(q)
    turns = TurnSearch(env, RecallRequest(query=q, budget_tokens=100), 10, qv)
    sp = env.space
    for n in (1, 3, 10):
        assert turns.lexical(n) == sp.sources.fts_search(q, n)
        assert [i for i, _ in turns.dense(n)] == [i for i, _ in sp.sources.vector_search(qv, n)]
    assert turns.hits == {"fts": 3, "vector": 3, "rows": 0}   # one search each, cut to each n
    # deeper, another query or vector: searched on its own, not cut from the shared result
    assert len(turns.lexical(12, "pottery")) == len(sp.sources.fts_search("pottery", 12))
    assert len(turns.dense(12)) == 12 and turns.hits["vector"] == 3
    since = datetime(2023, 5, 1)
    late = TurnSearch(env, RecallRequest(query=q, budget_tokens=100, since=since), 10, qv)
    assert {i for i, _ in late.dense(5)} == \
        {i for i, _ in sp.sources.vector_search(qv, 5, SourceFilter(since=since))}
    ids = [i for i, _ in sp.sources.vector_search(qv, 4)]
    rows = turns.rows(ids + ids[:1] + ["no-such-id"])
    assert [r.id for r in rows] == ids + ids[:1]
    with pytest.raises(FrozenInstanceError):   # rows are frozen: the voters share them safely
        rows[0].text = "changed by one voter"  # pyright: ignore[reportAttributeAccessIssue]
    again = turns.rows(ids[:1])
    assert again[0] is rows[0] and turns.hits["rows"] == 2   # the repeat, then the re-read


def test_every_fit_covers_every_kind_and_the_nearest_budget_is_used():
    from trimem.strategies.auto import fitted
    from trimem.strategies.auto.features import KINDS
    from trimem.strategies.auto.strategy import VOTERS, fitted_for

    for budget, fit in fitted.FITS.items():
        # every kind has weights: its own, or the fit's "*" (kinds without their own)
        assert set(fit["weights"]) <= {*KINDS, "*"} and fit["k"] > 0
        assert "*" in fit["weights"] or set(fit["weights"]) == set(KINDS)
        assert all(set(w) <= set(VOTERS) and any(w.values()) for w in fit["weights"].values())
        assert fitted_for(budget) is fit
    lo, hi = min(fitted.FITS), max(fitted.FITS)
    assert fitted_for(1) is fitted.FITS[lo] and fitted_for(10**6) is fitted.FITS[hi]


async def test_the_bm25_searches_start_while_the_query_is_embedded(client, server):
    """auto's BM25 searches need no vector: the one of the name-free form (what the voters
    search) is already asked for when the query's embedding starts, and the recall answers as
    before. An embedder that waits for it would wait out its 10 s without that."""
    import threading

    from trimem.storage.sources import Sources

    await remember_all(client)
    assert server.runtime.curation.wait_idle(120)
    rt = server.runtime
    asked, started = [], threading.Event()
    fts, embed = Sources.fts_search, rt.embed_queries

    def fts_seen(self, query, *a, **kw):
        asked.append(query)
        if "Ben" not in query:
            started.set()
        return fts(self, query, *a, **kw)

    def embed_after(texts):
        early = started.wait(10)
        out = embed(texts)
        waited.append(early)
        return out

    waited: list[bool] = []
    q = {"query": "Where does Ben do pottery?", "budget_tokens": 300}
    before = payload(await client.call_tool("recall", q))
    Sources.fts_search = fts_seen   # type: ignore[method-assign]
    rt.embed_queries = embed_after   # type: ignore[method-assign]
    try:
        out = payload(await client.call_tool("recall", q))
    finally:
        Sources.fts_search = fts   # type: ignore[method-assign]
        del rt.embed_queries
    assert waited == [True]          # the name-free BM25 search was running before the embedding
    assert any("Ben" not in a for a in asked)
    assert out["context"] == before["context"]
