"""Times at the edges of the documented range (years 0001 to 9999, UTC) work everywhere:
stored, curated by every strategy, filtered on, and recalled with relative dates; times
outside it are refused with a clear error and nothing written."""

from __future__ import annotations

import pytest

from helpers import error_text, payload

pytestmark = pytest.mark.anyio
STRATEGIES = ["plain", "hybrid", "workspace", "wiki", "auto"]
EDGES = {"first": "0001-01-01T00:00:00Z", "early": "0999-06-15T12:00:00Z",
         "last": "9999-12-31T00:00:00Z"}
LINES = ["Ana said she moved to Berlin last week for a job at Lumen.",
         "Ana plans to visit Rome next year and start a pottery class tomorrow.",
         "Yesterday Ana adopted a dog named Rex; five years ago she lived in Porto."]


@pytest.fixture
async def edged(client, server):
    for sid, when in EDGES.items():
        payload(await client.call_tool("remember", {
            "session_id": sid, "session_time": when,
            "messages": [{"content": t, "speaker": "Ana", "ref": f"{sid}-{k}"}
                         for k, t in enumerate(LINES)]}))
    assert server.runtime.curation.wait_idle(300)
    return server


async def test_edge_years_curate_and_recall_in_every_strategy(client, edged):
    failures = edged.runtime.curation.failures
    assert not failures, failures
    space = edged.runtime.space("default")
    assert {s.curation if s else None for s in map(space.sessions.get, EDGES)} == {"done"}
    bounds = [{}, {"since": "0999-12-31T00:00:00Z"}, {"since": "0001-01-01T00:00:00Z"},
              {"until": "9999-12-31T23:59:59Z"}, {"since": "0999-01-01", "until": "1000-01-01"},
              {"until": "0001-01-01T00:00:00Z"}]
    asked = 0
    for strategy in STRATEGIES:
        for query in ("Where did Ana move last week?", "What are Ana's plans for next year?",
                      "What did Ana adopt yesterday?"):
            for b in bounds:
                res = await client.call_tool("recall", {"query": query, "strategy": strategy, **b})
                out = payload(res)
                asked += 1
                refs = {s["ref"] for s in out["sources"]}
                if b.get("since") == "0999-12-31T00:00:00Z":   # only the year-9999 session
                    assert refs <= {f"last-{k}" for k in range(3)}, (strategy, b, refs)
                if b.get("until") == "1000-01-01":             # only the year-999 session
                    assert refs <= {f"early-{k}" for k in range(3)}, (strategy, b, refs)
    plain = payload(await client.call_tool("recall", {"query": "Berlin", "strategy": "plain",
                                                      "since": "0999-12-31T00:00:00Z"}))
    assert "last-0" in {s["ref"] for s in plain["sources"]}
    print(f"{asked} recalls over {len(EDGES)} edge sessions, {len(STRATEGIES)} strategies")


@pytest.mark.parametrize("when", ["0000-12-31T00:00:00Z", "10000-01-01T00:00:00Z",
                                  "9999-12-31T23:00:00-05:00", "0001-01-01T00:00:00+05:00"])
async def test_times_outside_the_range_are_refused(client, server, when):
    msg = error_text(await client.call_tool("remember", {"session_time": when,
                                                         "messages": [{"content": "hi"}]}))
    assert "0001" in msg and "9999" in msg, msg
    assert "0001" in error_text(await client.call_tool("recall", {"query": "hi", "since": when}))
    assert server.runtime.space("default").sources.count() == 0
