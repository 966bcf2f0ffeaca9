"""Derived vectors (memories, strategies' own tables) are stored as float16; the messages' own
vectors stay float32; a store whose tables were created with float32 keeps working."""

from __future__ import annotations

import pyarrow as pa
import pytest

from helpers import payload
from trimem.storage.schema import memories_schema

pytestmark = pytest.mark.anyio

TURNS = ["I adopted a beagle puppy called Biscuit last week.",
         "Biscuit chewed my running shoes on Tuesday.",
         "We start puppy training classes at the park next month.",
         "My sister is flying in from Lisbon for the training's first day."]


def vector_types(space) -> dict[str, pa.DataType]:
    """kind -> the value type of its stored vector column, for every vector table present."""
    out = {}
    for kind in ("sources", "memories", "ws_threads", "wiki_pages", "wiki_trajectories"):
        tbl = space.derived.table(kind) if kind.startswith(("ws_", "wiki_")) else space.table(kind)
        if tbl is not None and "vector" in tbl.schema.names:
            out[kind] = tbl.schema.field("vector").type.value_type
    return out


async def remember(client, session: str) -> None:
    msgs = [{"content": t, "speaker": "user" if i % 2 else "assistant", "ref": f"{session}-{i}"}
            for i, t in enumerate(TURNS)]
    payload(await client.call_tool("remember", {"messages": msgs, "session_id": session,
                                                "session_time": "2024-03-02T10:00:00"}))


async def test_new_tables_store_derived_vectors_as_float16(client, server):
    await remember(client, "s1")
    assert server.runtime.curation.wait_idle(120)
    types = vector_types(server.runtime.space("default"))
    assert types["sources"] == pa.float32()
    derived = {k: t for k, t in types.items() if k != "sources"}
    assert "memories" in derived and len(derived) >= 3, types
    assert set(derived.values()) == {pa.float16()}, types
    res = payload(await client.call_tool("recall", {"query": "what is the puppy called?",
                                                    "strategy": "hybrid", "budget_tokens": 500}))
    assert any("Biscuit" in i["text"] for i in res["items"] if i["kind"] in ("fact", "episode"))


async def test_a_float32_memories_table_from_an_earlier_version_keeps_working(client, server):
    space = server.runtime.space("default")
    await remember(client, "s0")           # binds the namespace's model (its dimension)
    assert server.runtime.curation.wait_idle(120)
    old = space.table("memories")
    space.core.store.drop_table(old.name)  # as an earlier version created it: float32 vectors
    schema = memories_schema(space.dim)
    i = schema.get_field_index("vector")
    schema = schema.set(i, pa.field("vector", pa.list_(pa.float32(), space.dim)))
    space.core.store.open_table(old.name, schema=schema)
    space.core.drop_copy("memories")
    await remember(client, "s1")
    assert server.runtime.curation.wait_idle(120)
    tbl = space.table("memories")
    assert tbl.schema.field("vector").type.value_type == pa.float32()
    assert tbl.count_rows() > 0
    res = payload(await client.call_tool("recall", {"query": "what is the puppy called?",
                                                    "strategy": "hybrid", "budget_tokens": 500}))
    assert any("Biscuit" in i["text"] for i in res["items"] if i["kind"] in ("fact", "episode"))
