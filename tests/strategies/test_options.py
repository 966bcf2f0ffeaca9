"""Recall options: each strategy reads a typed, frozen view of them; an option no strategy
declares is refused where the call comes in, instead of being ignored."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from helpers import payload
from trimem.strategies.auto.strategy import AutoOptions
from trimem.strategies.hybrid.retrieve import HybridOptions
from trimem.strategies.options import OptionError, RecallOptions
from trimem.strategies.plain.strategy import PlainOptions
from trimem.strategies.registry import option_keys
from trimem.strategies.wiki.strategy import WikiOptions
from trimem.strategies.workspace.strategy import WorkspaceOptions
from trimem.tools.errors import ToolFailure
from trimem.tools.recall import recall


def test_each_strategy_reads_the_keys_it_declares_as_their_types():
    opts = RecallOptions.parse({"k": "3", "candidates": 50.0, "strip_names": 0, "w_wiki": 2})
    assert opts.of(HybridOptions).k == 3 and opts.of(WikiOptions).k == 3
    assert opts.of(AutoOptions).k == 3.0 and isinstance(opts.of(AutoOptions).k, float)
    assert opts.of(PlainOptions).candidates == 50 and isinstance(opts.of(PlainOptions).candidates, int)
    assert opts.of(PlainOptions).strip_names == 0 and opts.of(WorkspaceOptions).strip_names == 0
    assert opts.of(AutoOptions).weights() == {"wiki": 2.0}
    assert RecallOptions().of(PlainOptions) == PlainOptions()   # the defaults that ship
    with pytest.raises(FrozenInstanceError):
        opts.of(PlainOptions).candidates = 1   # type: ignore[misc]


def test_workspace_aliases():
    ws = RecallOptions.parse({"ablation": "seed_only", "B": "8"}).of(WorkspaceOptions)
    assert (ws.seed_only, ws.hops, ws.units) == (1, 0, 8)
    assert RecallOptions.parse({"ablation": "no_such"}).of(WorkspaceOptions) == WorkspaceOptions()


def test_a_value_of_the_wrong_type_is_an_error():
    with pytest.raises(OptionError, match="hops"):
        RecallOptions.parse({"hops": "three"}).of(WorkspaceOptions)


def test_unknown_keys_are_named():
    known = option_keys()
    assert {"hops", "ablation", "B", "w_bm25", "current_first", "routing", "rrf_k"} <= known
    with pytest.raises(OptionError, match="hopz"):
        RecallOptions.parse({"hopz": 2, "hops": 2}, known)


@pytest.mark.anyio
async def test_the_recall_tool_refuses_an_option_no_strategy_reads(client, server):
    payload(await client.call_tool("remember", {
        "messages": [{"content": "Ana moved to Madrid in May.", "speaker": "Ana"}],
        "session_id": "s1"}))
    rt = server.runtime
    assert recall(rt, "where does Ana live?", "plain", "default", 500, options={"hops": 1}).context
    with pytest.raises(ToolFailure, match="unknown recall option.*hopz"):
        recall(rt, "where does Ana live?", "plain", "default", 500, options={"hopz": 1})
