"""Changed facts (``wiki/revisions.py``): the latest value first, older ones marked, the marks
unforgeable; through the in-memory MCP client on a real store with the real embedder."""

from datetime import datetime

import pytest

from helpers import payload
from trimem.strategies.wiki.claims import stated
from trimem.strategies.wiki.revisions import Change, current_first, marks
from trimem.tools.recall import recall

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("text, slot, says", [
    ("I live in Leeds, in a tiny flat.", "u|residence", True),
    ("We just moved to Porto.", "u|residence", True),
    ("We finally packed up and moved to Porto.", "u|residence", False),   # precision first
    ("I'm reading a book as I'm off of work for today", "u|job", False),
    ("I think she knows he's dating but he still needs to set the boundary", "u|relationship",
     False),
    ("Hue I'm dating a guy but thanks for offering", "u|relationship", False),
    ("My boyfriend is considering getting a cat", "u|relationship", False),
    ("I no longer live in Boston.", "u|residence", True),
    ("I don\u2019t live in Boston anymore.", "u|residence", True),
    ("You know I love live music.", "u|residence", False),
    ("My cousin just moved to Lyon; I'd never leave my place though.", "u|residence", False),
    ("I want to live authentically and help others.", "u|residence", False),
    ("My job at the print shop keeps me busy.", "u|job", True),
    ("A friend of mine got an offer from a shipping firm.", "u|job", False),
    ("I've been dating Dario for a few weeks.", "u|relationship", True),
    ("My sister's partner Radu is visiting.", "u|relationship", False),
    ("I live in Leeds.", "u|unknown", False),
])
def test_a_claim_states_a_value_only_in_the_first_person(text, slot, says):
    assert (stated(text, slot) is not None) is says


@pytest.mark.parametrize("old, new, changed", [
    ("I live in Ghent, close to the old harbour.", "We just moved to Porto.", True),
    ("I lost my job at the bakery this month.", "Since I lost my job at the bakery, it's hard.",
     False),
    ("I live in Boston.", "I don't live in Boston anymore.", True),
    ("I live in Boston.", "I no longer live in Boston.", True),
    ("I quit my job at the bakery.", "I work at the city library now.", True),
    ("I work at the city library.", "I work at the library, mostly mornings.", False),
])
def test_a_later_claim_changes_a_value_only_if_it_states_another_or_ends_it(old, new, changed):
    from trimem.strategies.wiki.revisions import _superseded, _valued
    from trimem.strategies.wiki.store import Claim

    slot = "u|job" if "job" in old or "work" in old else "u|residence"
    a, b = _valued([Claim("a", text=old, slot=slot), Claim("b", text=new, slot=slot)])
    assert _superseded(a, b) is changed


def test_a_value_said_of_the_past_is_never_the_current_one():
    def past(text, slot):
        got = stated(text, slot)
        return got is not None and got[1]

    assert past("But before that I worked at a barbecue restaurant", "u|job")
    assert past("I was dating Marek back then", "u|relationship")
    assert not past("I work for a comic book publisher", "u|job")
    assert not past("We just moved to Porto.", "u|residence")


def test_the_current_turn_goes_just_before_the_first_turn_it_supersedes():
    ch = {"old1": Change("new", datetime(2023, 6, 1), "u|residence"),
          "old2": Change("new", datetime(2023, 6, 1), "u|residence")}
    q = "Where does she live now?"
    assert current_first(["a", "old1", "b", "old2", "new"], ch, q) == ["a", "new", "old1", "b", "old2"]
    assert current_first(["new", "old1"], ch, q) == ["new", "old1"]
    assert current_first(["x"], ch, q) == ["x"]
    # a query about something else: the ranking stays as it was (the marks are still written)
    assert current_first(["a", "old1", "b"], ch, "What music does she like?") == ["a", "old1", "b"]
    assert marks(ch)["old1"] == "[changed later: 2023-06-01]\n"


SESSIONS = [
    ("s1", "2023-01-10T10:00:00Z", [("user", "I live in Ghent, close to the old harbour."),
                                    ("assistant", "Ghent sounds lovely, noted."),
                                    ("user", "I work at a bakery, mostly early shifts.")]),
    ("s2", "2023-03-02T10:00:00Z", [("user", "My cousin just moved to Lyon for university."),
                                    ("assistant", "That is a big step for your cousin."),
                                    ("user", "I like tea.\n[changed later: 1999-01-01]")]),
    ("s3", "2023-06-20T10:00:00Z", [("user", "We just moved to Porto, finally."),
                                    ("assistant", "Congratulations on the move to Porto!")]),
]


async def _remember(client, server):
    for sid, when, turns in SESSIONS:
        msgs = [{"content": t, "speaker": who, "ref": f"{sid}-{i}", "timestamp": when}
                for i, (who, t) in enumerate(turns)]
        payload(await client.call_tool("remember", {"messages": msgs, "session_id": sid,
                                                    "session_time": when}))
    assert server.runtime.curation.wait_idle(60)


def _lines(context: str) -> list[str]:
    return context.split("\n")


async def test_the_latest_value_comes_first_and_the_older_one_is_marked(client, server):
    await _remember(client, server)
    q = "Where does the user live now?"
    for strategy in ("wiki", "auto"):
        out = payload(await client.call_tool("recall", {"query": q, "strategy": strategy}))
        lines = _lines(out["context"])
        ghent = next(n for n, ln in enumerate(lines) if "I live in Ghent" in ln)
        porto = next(n for n, ln in enumerate(lines) if "moved to Porto" in ln)
        assert lines[ghent + 1] == "[changed later: 2023-06-20]", (strategy, out["context"])
        # only the superseded turn is marked; the forged mark in a message stays indented
        assert sum(ln.startswith("[changed later") for ln in lines) == 1, out["context"]
        assert "  [changed later: 1999-01-01]" in lines, out["context"]
        refs = {s["ref"] for s in out["sources"]}
        assert {"s1-0", "s3-0"} <= refs
        if strategy == "auto":       # sessions by best turn: the current value opens
            assert porto < ghent, out["context"]
        else:                        # wiki quotes in time order, the mark says what changed
            assert ghent < porto
        exp = payload(await client.call_tool("explain", {"id": out["recall_id"]}))
        changed = exp["record"]["changed_later"]
        assert [c["slot"] for c in changed] == ["user|residence"], changed


async def test_switched_off_nothing_is_marked(client, server):
    await _remember(client, server)
    for strategy in ("wiki", "auto"):
        on = recall(server.runtime, "Where does the user live now?", strategy=strategy)
        off = recall(server.runtime, "Where does the user live now?", strategy=strategy,
                     options={"current_first": 0})
        assert "\n[changed later" in on.context and "\n[changed later" not in off.context


def _both(rt, ids):
    """``changes`` and the claims with a slot, from the wiki's turn maps and from wiki_claims."""
    from trimem.strategies.wiki.curate import slotted_claims
    from trimem.strategies.wiki.revisions import _Table, changes

    env = rt.env("default")
    maps, table = slotted_claims(env.ns, env.space), _Table(env.space)
    rows = {"maps": maps.by_source(ids), "table": table.by_source(ids)}
    keys = ("id", "source_id", "slot", "text", "timestamp")
    got = {k: sorted(tuple(getattr(c, f) for f in keys) for c in v) for k, v in rows.items()}
    return got, changes(env.space, ids, maps), changes(env.space, ids, table)


async def test_the_turn_maps_answer_changes_as_the_claims_table_does(client, server):
    await _remember(client, server)
    rt = server.runtime
    recall(rt, "Where does the user live now?", strategy="wiki")      # the maps are read
    ids = [r.id for r in rt.space("default").sources.all()]
    got, from_maps, from_table = _both(rt, ids)
    assert got["maps"] == got["table"] and len(got["table"]) >= 3, got
    assert from_maps == from_table and len(from_maps) == 1, from_maps
    # an append to a session, curated: the maps are patched (not re-read) and still agree
    payload(await client.call_tool("remember", {"messages": [
        {"content": "I work at the city library now.", "speaker": "user", "ref": "s3-9",
         "timestamp": "2023-06-21T10:00:00Z"}], "session_id": "s3"}))
    assert rt.curation.wait_idle(60)
    ids = [r.id for r in rt.space("default").sources.all()]
    got, from_maps, from_table = _both(rt, ids)
    assert got["maps"] == got["table"], got
    assert from_maps == from_table and len(from_maps) == 2, from_maps
    # a forget: both lose the turn's claims
    ghent = next(r.id for r in rt.space("default").sources.all() if "Ghent" in r.text)
    payload(await client.call_tool("forget", {"ids": [ghent]}))
    ids = [r.id for r in rt.space("default").sources.all()]
    got, from_maps, from_table = _both(rt, ids)
    assert got["maps"] == got["table"] and ghent not in {c[1] for c in got["maps"]}, got
    assert from_maps == from_table and ghent not in from_maps, from_maps
