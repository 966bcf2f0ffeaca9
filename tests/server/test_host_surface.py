"""What a host and its model see: tool schemas and annotations, result text within the budget,
paged explain, short texts for the other tools."""

from __future__ import annotations

import json

import pytest

from helpers import error_text, payload, turns
from trimem.strategies import registry
from trimem.tools.explain import PAGE_TOKENS
from trimem.tools.recall import HEADER_MAX_CHARS

pytestmark = pytest.mark.anyio
TIME_PARAMS = {("recall", "since"), ("recall", "until"), ("remember", "session_time")}


def text_of(res) -> str:
    return "".join(c.text for c in res.content if c.type == "text")


def walk_properties(schema: dict, where: str):
    """(path, property schema) of every property, nested models ($defs) included."""
    for name, prop in (schema.get("properties") or {}).items():
        yield f"{where}.{name}", prop
    for dname, d in (schema.get("$defs") or {}).items():
        yield from walk_properties(d, f"{where}.$defs.{dname}")


async def test_every_parameter_is_described_and_every_tool_annotated(client):
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"remember", "recall", "consolidate", "explain", "forget"}
    missing = [path for name, t in tools.items()
               for path, prop in walk_properties(t.input_schema, name)
               if not (prop.get("description") or "").strip()]
    assert not missing, f"parameters without a description: {missing}"
    for name, t in tools.items():
        a = t.annotations
        assert a is not None, f"{name} has no annotations"
        assert a.read_only_hint is not None and a.destructive_hint is not None, name
        assert t.description and t.description == t.description.strip(), name
        assert "\n " not in t.description, f"{name}: stray indentation in its description"
    assert tools["recall"].annotations.read_only_hint and tools["explain"].annotations.read_only_hint
    assert tools["forget"].annotations.destructive_hint
    rem = tools["remember"].annotations
    assert rem.destructive_hint is False and rem.idempotent_hint and not rem.read_only_hint
    for tool, param in TIME_PARAMS:
        prop = tools[tool].input_schema["properties"][param]
        arms = prop.get("anyOf", [prop])
        assert any(arm.get("format") == "date-time" for arm in arms), (tool, param)
    strategy = tools["recall"].input_schema["properties"]["strategy"]["description"]
    assert all(f'"{name}":' in strategy for name in registry.names())
    assert tools["recall"].output_schema and "context" in tools["recall"].output_schema["properties"]


async def test_recall_text_is_the_context_within_the_budget(client):
    long = [f"Session note {i}: the courier left parcel {i} with the neighbour at number {i + 2}, "
            "next to the green gate, and said to call before six." for i in range(120)]
    payload(await client.call_tool("remember", {"messages": turns(*long)}))
    for budget in (60, 250, 1000):
        res = await client.call_tool("recall", {"query": "where did the courier leave the parcel?",
                                                "budget_tokens": budget, "strategy": "plain"})
        out = payload(res)
        text = text_of(res)
        assert len(text) <= budget * 4 + HEADER_MAX_CHARS, (budget, len(text))
        head, _, body = text.partition("\n")
        assert out["recall_id"] in head and "abstain" in head and len(head) <= HEADER_MAX_CHARS
        assert body == out["context"]   # the context once; items and sources stay structured
        assert out["sources"] and '"source_ids"' not in text


async def test_explain_text_is_paged_under_the_cap(client):
    long = [f"Line {i}: a long remark about the garden, the shed, tools {i} and the weather."
            for i in range(200)]
    payload(await client.call_tool("remember", {"messages": turns(*long)}))
    rec = payload(await client.call_tool("recall", {"query": "the garden shed tools",
                                                    "strategy": "plain", "budget_tokens": 8000}))
    first = await client.call_tool("explain", {"id": rec["recall_id"]})
    assert len(text_of(first)) <= PAGE_TOKENS * 4
    header = text_of(first).split("\n", 1)[0]
    assert "page 1 of " in header
    n = int(header.split("page 1 of ")[1].split(";")[0].rstrip("]"))
    assert n > 1 and "page=2" in header
    last = await client.call_tool("explain", {"id": rec["recall_id"], "page": n})
    assert len(text_of(last)) <= PAGE_TOKENS * 4 and payload(last)["record"]["items"]
    assert "past the end" in error_text(await client.call_tool(
        "explain", {"id": rec["recall_id"], "page": n + 1}))


async def test_other_tools_answer_short_text(client):
    rem = await client.call_tool("remember", {"messages": turns("The red kettle is on the shelf."),
                                              "namespace": "kitchen"})
    forgot = await client.call_tool("forget", {"refs": ["t1", "nope"], "namespace": "kitchen"})
    plan = await client.call_tool("consolidate", {"namespace": "kitchen", "dry_run": True})
    for res, words in ((rem, "Stored 1 message"), (forgot, "Forgot 1 message"), (plan, "dry run")):
        text = text_of(res)
        assert words in text and len(text) < 400, text
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)   # prose for the model, not the structured result again
    assert '"nope"' in text_of(forgot)
