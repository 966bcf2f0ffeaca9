"""Hostile and malformed input through the real MCP client (property-based, hypothesis).

Invariants for every call: the server answers (success or a clear, anticipated tool error —
never a crash), a failed call writes nothing, and nothing from another namespace comes back.
"""

from __future__ import annotations

import re

import anyio
import pytest

from helpers import text_of
from hypothesis import HealthCheck, given, settings, strategies as st
from mcp import Client

from trimem.server.app import build_server
from trimem.server.settings import Settings

INJECTIONS = ["' OR 1=1 --", "x' OR '1'='1", "\"; DROP TABLE sources; --", "\\", "\\'", "%", "_",
              "a\x00b", "ns') OR true --", "*", "../../etc/passwd", "\u202e", "' OR namespace != '",
              "$(rm -rf /)", "{{7*7}}", "NULL", "true", "1; DELETE FROM sources"]
SECRET = "canary-secret-9f1c"
CASES = {"n": 0}
FUZZ = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

texts = st.text(max_size=200) | st.sampled_from(INJECTIONS)
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts
metadata = st.recursive(json_leaf, lambda c: st.lists(c, max_size=4) | st.dictionaries(texts, c, max_size=4),
                        max_leaves=30)
message = st.fixed_dictionaries({"content": texts}, optional={
    "speaker": texts, "timestamp": texts | st.datetimes().map(lambda d: d.isoformat()),
    "ref": texts, "metadata": st.dictionaries(texts, metadata, max_size=3) | metadata})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    server = build_server(Settings(home=str(tmp_path_factory.mktemp("fuzz") / "home")))

    async def seed():
        async with Client(server) as c:
            res = await c.call_tool("remember", {"messages": [{"content": f"The code is {SECRET}",
                                                               "ref": "canary"}],
                                                 "namespace": "canary"})
            assert not res.is_error
    anyio.run(seed)
    return server


def call(server, tool: str, args: dict):
    async def go():
        async with Client(server) as c:
            return await c.call_tool(tool, args)
    CASES["n"] += 1
    return anyio.run(go)


def sources_total(server) -> int:
    store = server.runtime.store
    return sum(server.runtime.space(ns).sources.count() for ns in store.namespaces())


def assert_clean(res) -> None:
    text = " ".join(getattr(c, "text", "") for c in res.content)
    # an anticipated error reads "Error executing tool X: <what to fix>"; a crash has no reason
    assert not (res.is_error and re.fullmatch(r"Error executing tool \w+", text.strip())), text
    assert SECRET not in text


@FUZZ
@given(messages=st.lists(message, max_size=4), ns=texts, sid=st.none() | texts)
def test_remember_fuzz(world, messages, ns, sid):
    before = sources_total(world)
    args = {"messages": messages, "namespace": ns}
    if sid is not None:
        args["session_id"] = sid
    res = call(world, "remember", args)
    assert_clean(res)
    if res.is_error:
        assert sources_total(world) == before, "a rejected call wrote something"


@FUZZ
@given(query=texts, ns=texts, budget=st.integers(-10, 10**7) | st.sampled_from([0, 1, 2000]),
       strategy=st.sampled_from(["auto", "plain"]) | texts, since=st.none() | texts)
def test_recall_fuzz(world, query, ns, budget, strategy, since):
    args = {"query": query, "namespace": ns, "budget_tokens": budget, "strategy": strategy}
    if since is not None:
        args["since"] = since
    res = call(world, "recall", args)
    assert_clean(res)
    if not res.is_error:
        out = res.structured_content
        assert out["tokens"] <= budget and (ns == "canary" or SECRET not in out["context"])


@FUZZ
@given(ident=texts, ns=texts, refs=st.lists(texts, max_size=3), sid=st.none() | texts)
def test_explain_and_forget_fuzz(world, ident, ns, refs, sid):
    assert_clean(call(world, "explain", {"id": ident, "namespace": ns}))
    if ns == "canary":
        return   # forgetting there is legitimate; the canary must survive for the other tests
    args = {"ids": [ident], "refs": refs, "namespace": ns}
    if sid is not None:
        args["session_id"] = sid
    assert_clean(call(world, "forget", args))


def test_huge_inputs_are_refused_clearly(world):
    before = sources_total(world)
    res = call(world, "remember", {"messages": [{"content": "x" * 10_000_000}]})
    assert res.is_error and "limit" in text_of(res)
    res = call(world, "recall", {"query": "q" * 10_000_000})
    assert res.is_error and "limit" in text_of(res)
    assert sources_total(world) == before


def test_the_canary_survived_and_is_only_in_its_namespace(world):
    res = call(world, "recall", {"query": "code", "namespace": "canary"})
    assert SECRET in res.structured_content["context"]
    print(f"fuzz cases run: {CASES['n']}, injection payloads: {len(INJECTIONS)}")
