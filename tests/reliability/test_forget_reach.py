"""A forget in one ``trimem serve`` process holds in a second process on the
same memory folder within 2 s, for every strategy (two real servers over stdio, real MCP client)."""

from __future__ import annotations

import pytest

from trimem.bench.forget_reach import NS, STRATEGIES, measure
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow]   # two server processes
BOUND_S = 2.0


async def test_forget_reaches_the_other_process_within_two_seconds(tmp_path):
    # two rounds: the second one runs against caches that already lived through a forget
    took, secrets = await measure(tmp_path / "home", STRATEGIES, runs=2, timeout=10.0)
    # no recall that B starts more than 2 s after A's forget returns the text, and B answers
    # without it soon after (within one more recall)
    slow = {s: max(x for x, _ in t) for s, t in took.items() if max(x for x, _ in t) > BOUND_S}
    assert not slow, f"the other process still returned forgotten text after {slow} s"
    assert all(y < BOUND_S + 5 for t in took.values() for _, y in t), took
    # and neither process left it in the recall log (B logged it while it still returned it)
    space = build_server(Settings(home=str(tmp_path / "home"), curation=False)).runtime.space(NS)
    tbl = space.table("recalls")
    logged = [] if tbl is None else tbl.search().select(["trace"]).limit(None).to_list()
    assert not [s for s in secrets for r in logged if s in r["trace"]]
