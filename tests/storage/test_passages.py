"""Passages of long messages: sizes that fit the embedder, and stores from before passages."""

from __future__ import annotations

import pytest

from helpers import payload
from longtexts import ANSWER, DETAIL, DISTRACTORS
from trimem.storage.passages import OVERLAP, PASSAGE_CHARS, VERSION, passage_spans

MARKDOWN = ("| setting | old | new |\n|---|---|---|\n| `max_connections` | 500 | 200 |\n"
            "| `CONN_MAX_AGE` | 600 | 0 |\n") * 30


def test_every_passage_fits_the_embedders_window_and_the_detail_stands_whole_in_one():
    from trimem.providers.local import MAX_SEQ_LEN, LocalEmbedder

    tok = LocalEmbedder().load()._tokenizer      # truncates at 256 word pieces, as embedding does
    spans = passage_spans(ANSWER)                # prose, Python, YAML, INI: ~3-4.5 chars a piece
    assert spans[0][0] == 0 and spans[-1][1] == len(ANSWER) and len(spans) > 4
    for (_a, b), (c, _) in zip(spans, spans[1:]):
        assert c < b and b - c <= OVERLAP        # consecutive passages overlap, nothing skipped
    for a, b in spans:
        assert b - a <= PASSAGE_CHARS
        assert len(tok.encode("assistant: " + ANSWER[a:b]).ids) < MAX_SEQ_LEN   # read whole
    at = ANSWER.index(DETAIL)
    assert any(a <= at and at + len(DETAIL) <= b for a, b in passage_spans(ANSWER))
    assert passage_spans("x" * PASSAGE_CHARS) == [(0, PASSAGE_CHARS)]   # one passage: itself
    # the densest text (a table of code identifiers, ~2.2 chars a piece) is truncated, but what
    # a passage loses at its end is the start of the next one: every part is read somewhere
    spans = passage_spans(MARKDOWN)
    prefix = len("assistant: ")
    for (a, b), (c, _) in zip(spans, spans[1:]):
        enc = tok.encode("assistant: " + MARKDOWN[a:b])
        assert len(enc.ids) == MAX_SEQ_LEN
        read_to = a + max(end for _, end in enc.offsets) - prefix
        assert read_to >= c


def test_a_namespace_of_short_messages_has_no_passages(server):
    from trimem.tools.remember import Message, remember

    rt = server.runtime
    remember(rt, [Message(content=d, speaker="user") for d in DISTRACTORS], namespace="short")
    assert not any(k.startswith("passages") for k in rt.space("short").stats())


@pytest.mark.anyio
async def test_a_store_written_before_passages_gets_them_on_first_use(home, tmp_path):
    from mcp import Client

    from trimem.server.app import build_server
    from trimem.server.settings import Settings

    msgs = ([{"content": ANSWER, "speaker": "assistant", "ref": "a1"}]
            + [{"content": d, "speaker": "user", "ref": f"d{k}"} for k, d in enumerate(DISTRACTORS)])
    first = build_server(Settings(home=str(home)))
    async with Client(first) as c:
        ids = payload(await c.call_tool("remember", {"messages": msgs, "session_id": "s",
                                                     "curated": {"facts": []}}))["source_ids"]
    space = first.runtime.space("default")
    table = next(k for k in space.stats() if k.startswith("passages__"))
    # make it a store of the old layout: no passages table, no record of them
    first.runtime.store.drop_table(f"ns_{space.key}__{table}")
    first.runtime.store.set_meta(f"passages:{space.name('sources')}", "0:old-sizes")
    first.runtime.store.close()

    again = build_server(Settings(home=str(home)))
    async with Client(again) as c:
        rec = payload(await c.call_tool("recall", {
            "query": "What staging cluster did we pick for the first PgBouncer cutover?",
            "strategy": "plain", "budget_tokens": 600}))
    sp = again.runtime.space("default")
    assert sp.stats()[table] == len(passage_spans(ANSWER))
    assert again.runtime.store.get_meta(f"passages:{sp.name('sources')}") == VERSION
    ref = next(s for s in rec["sources"] if s["id"] == ids[0])
    assert DETAIL in ref["text"] and ref["start"] > 0
