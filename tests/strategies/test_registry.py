"""The recall tool's `strategy` Literal and the registry name the same strategies."""

from __future__ import annotations

import typing

import pytest

from trimem.strategies import registry
from trimem.strategies.base import Strategy


def test_literal_matches_registry():
    assert set(typing.get_args(registry.StrategyName)) == set(registry.names())


@pytest.mark.parametrize("name", registry.names())
def test_every_strategy_loads_and_satisfies_the_protocol(name):
    strat = registry.get(name)
    assert isinstance(strat, Strategy) and strat.name == name


def test_unknown_strategy_names_the_choices():
    with pytest.raises(KeyError, match=r"choose one of: auto, (\w+, )*plain"):
        registry.get("telepathy")


@pytest.mark.anyio
async def test_tool_schema_offers_exactly_the_registered_strategies(server):
    from mcp import Client

    async with Client(server) as c:
        tool = next(t for t in (await c.list_tools()).tools if t.name == "recall")
    assert set(tool.input_schema["properties"]["strategy"]["enum"]) == set(registry.names())


def test_each_optional_hook_finds_the_strategies_that_implement_it():
    """``with_hook`` takes the hook's protocol and hands back the strategies typed by it: each
    strategy it names has the method, and every strategy with the method is named."""
    from trimem.strategies.base import Configurable, Consolidates, Curates, Explains, Forgets

    for hook, method in [(Curates, "curate"), (Consolidates, "consolidate"),
                         (Forgets, "forget"), (Explains, "explain"), (Configurable, "Options")]:
        found = {s.name for s in registry.with_hook(hook)}
        assert found == {n for n in registry.names() if hasattr(registry.get(n), method)}, hook
    assert {s.name for s in registry.with_hook(Curates)} == {"hybrid", "wiki", "workspace"}
    assert registry.curates()
