"""Long messages: every part of a 6,000-character assistant answer can be found and quoted.

all-MiniLM-L6-v2 reads the first 256 word pieces only; the detail asked about sits in the last
fifth of the answer. Passages (``storage/passages.py``) make it findable by dense search, the
recall quotes a verbatim excerpt around it with its offsets (``strategies/render.py``), explain
shows them and forget removes the passages with their message.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import payload
from longtexts import ANSWER, DETAIL, DISTRACTORS, QUESTION
from trimem.strategies.frame import INDENT

pytestmark = pytest.mark.anyio
ASK = "What staging cluster did we pick for the first PgBouncer cutover?"
LEX = "superuser_reserved_connections Gunicorn analytics nightly export psql"   # its opening only


def bytes_on_disk(home: Path, needle: bytes) -> list[str]:
    return [str(Path(root, f).relative_to(home)) for root, _, files in os.walk(home)
            for f in files if needle in Path(root, f).read_bytes()]


def exchange() -> list[dict]:
    return ([{"content": QUESTION, "speaker": "user", "ref": "q1"},
             {"content": ANSWER, "speaker": "assistant", "ref": "a1"}]
            + [{"content": d, "speaker": "user", "ref": f"d{k}"} for k, d in enumerate(DISTRACTORS)])


def quoted(text: str) -> str:
    """A source's text as it stands in the context (line breaks are followed by INDENT)."""
    return text.replace("\n", "\n" + INDENT)


async def stored(client) -> dict:
    return payload(await client.call_tool("remember", {"messages": exchange(), "session_id": "ide"}))


async def test_dense_search_finds_a_detail_in_the_last_third(client, server):
    ids = (await stored(client))["source_ids"]
    rt = server.runtime
    space = rt.space("default")
    qv = rt.embed_query(ASK)
    dense = space.sources.vector_search(qv, 3)
    assert dense[0][0] == ids[1]                      # the answer, not a short staging turn
    # what the message's own vector (its first 256 word pieces) scores loses to a short turn
    vecs = space.sources.vectors(ids)
    own = float(vecs[ids[1]] @ qv)
    assert own < max(float(vecs[i] @ qv) for i in ids[2:]) < dense[0][1]
    row = space.sources.get([ids[1]])[0]
    start, end = row.span or (0, 0)
    assert ANSWER[start:end].find(DETAIL) >= 0        # the best passage holds the detail
    assert ANSWER.index(DETAIL) > 2 * len(ANSWER) / 3


@pytest.mark.parametrize("strategy", ["plain", "auto"])
async def test_recall_quotes_an_excerpt_with_its_offsets(client, strategy):
    ids = (await stored(client))["source_ids"]
    rec = payload(await client.call_tool("recall", {"query": ASK, "strategy": strategy,
                                                    "budget_tokens": 1000}))
    assert quoted(DETAIL) in rec["context"]
    cited = {s["id"]: s for s in rec["sources"]}
    ref = cited[ids[1]]
    assert ref["ref"] == "a1" and ref["start"] is not None
    assert ref["text"] == ANSWER[ref["start"]:ref["end"]] and DETAIL in ref["text"]
    assert len(ref["text"]) <= 1200 < len(ANSWER)
    for s in rec["sources"]:                          # sources stay honest
        assert quoted(s["text"]) in rec["context"]
    short = [s for s in rec["sources"] if s["id"] != ids[1]]
    assert short and all(s["start"] is None and s["end"] is None for s in short)


async def test_a_row_read_before_a_later_search_is_quoted_at_that_searchs_passage(client, server):
    """A recall's shared search reads the dense hits' rows (for their speakers) before BM25
    runs; the row it then hands out must carry the best passage of every search so far, as a
    fresh read would, not the one of its first read (that kept 13 of 60 long-message facts out
    of plain's context at 2,000 tokens, ``bench/longmsg.py``)."""
    from trimem.strategies.base import RecallRequest
    from trimem.strategies.search import TurnSearch

    ids = (await stored(client))["source_ids"]
    env = server.runtime.env("default")
    turns = TurnSearch(env, RecallRequest(query=ASK, budget_tokens=1000), 10)
    assert turns.dense(3)[0][0] == ids[1]
    first = turns.rows([ids[1]])[0].span
    assert first is not None
    assert DETAIL in ANSWER[first[0]:first[1]]
    # BM25 ranks the answer first by another passage
    assert turns.lexical(3, LEX)[0][0] == ids[1]
    later = env.space.sources.get([ids[1]])[0].span
    assert later != first and DETAIL not in ANSWER[later[0]:later[1]]
    assert turns.rows([ids[1]])[0].span == later


async def test_workspace_quotes_the_passage_of_this_recall_not_of_its_units_first_read(client, server):
    """The workspace keeps unit rows across recalls; a long message first read for another
    question must still be quoted at the passage that matches this one."""
    await stored(client)
    assert server.runtime.curation.wait_idle(120)
    ask = {"strategy": "workspace", "budget_tokens": 1000}
    first = payload(await client.call_tool("recall", ask | {"query": LEX}))
    assert DETAIL not in first["context"] and "superuser_reserved_connections" in first["context"]
    rec = payload(await client.call_tool("recall", ask | {"query": ASK}))
    assert quoted(DETAIL) in rec["context"]


async def test_explain_shows_the_excerpts_offsets(client):
    ids = (await stored(client))["source_ids"]
    rec = payload(await client.call_tool("recall", {"query": ASK, "strategy": "plain",
                                                    "budget_tokens": 1000}))
    ref = next(s for s in rec["sources"] if s["id"] == ids[1])
    exp = payload(await client.call_tool("explain", {"id": rec["recall_id"]}))
    assert exp["record"]["excerpts"] == [{"id": ids[1], "start": ref["start"], "end": ref["end"]}]


async def test_forget_removes_the_passages_too(client, server, home):
    ids = (await stored(client))["source_ids"]
    rt = server.runtime
    space = rt.space("default")
    passages = next(k for k in space.stats() if k.startswith("passages__"))
    assert space.stats()[passages] > 5
    assert [p for p in bytes_on_disk(home, b"heron-stg-2") if "__passages__" in p]
    out = payload(await client.call_tool("forget", {"refs": ["a1"]}))
    assert out["source_ids"] == [ids[1]]
    assert space.stats()[passages] == 0
    assert ids[1] not in [i for i, _ in space.sources.vector_search(rt.embed_query(ASK), 10)]
    assert ids[1] not in [i for i, _ in space.sources.fts_search("heron-stg-2 staging cluster", 10)]
    # the passages' files hold neither the text nor its index tokens (the sources table's
    # purge is forget's own business, tested in test_forget_explain.py)
    assert [p for p in bytes_on_disk(home, b"heron") if "__passages__" in p] == []
    rec = payload(await client.call_tool("recall", {"query": ASK, "strategy": "plain"}))
    assert "heron" not in rec["context"] and ids[1] not in {s["id"] for s in rec["sources"]}


async def test_export_carries_messages_not_passages_and_import_rebuilds_them(client, server, tmp_path):
    from trimem.server.settings import Settings
    from trimem.tools.runtime import Runtime
    from trimem.transfer.export import export_records
    from trimem.transfer.importer import import_records

    await stored(client)
    _, recs = export_records(server.runtime, ["default"])
    recs = list(recs)
    messages = [r for r in recs if r.type == "message"]
    assert len(messages) == len(exchange())                 # one record per message, derived
    assert sum(ANSWER == getattr(r, "content", None) for r in messages) == 1   # rows stay home
    assert not any("passage" in r.type for r in recs)
    rt = Runtime(Settings(home=str(tmp_path / "other"), curation=False).to_config())
    try:
        import_records(rt, recs)
        space = rt.space("default")
        assert any(k.startswith("passages__") and n > 5 for k, n in space.stats().items())
        dense = space.sources.vector_search(rt.embed_query(ASK), 1)
        assert space.sources.get([dense[0][0]])[0].text == ANSWER
    finally:
        rt.close()
