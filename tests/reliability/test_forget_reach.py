"""Item 1 of issue 14: a forget in one ``trimem serve`` process holds in a second process on the
same memory folder within 2 s, for every strategy (two real servers over stdio, real MCP client)."""

from __future__ import annotations

import pytest

from trimem.bench.forget_reach import STRATEGIES, measure

pytestmark = pytest.mark.anyio
BOUND_S = 2.0


async def test_forget_reaches_the_other_process_within_two_seconds(tmp_path):
    # two rounds: the second one runs against caches that already lived through a forget
    took = await measure(tmp_path / "home", STRATEGIES, runs=2, timeout=10.0)
    slow = {s: max(t) for s, t in took.items() if max(t) > BOUND_S}
    assert not slow, f"the other process still returned forgotten text after {slow} s"
