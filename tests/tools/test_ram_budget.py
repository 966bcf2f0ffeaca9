"""``TRIMEM_MAX_RAM_MB``: with a budget too small for any in-process copy or cached graph,
every strategy's recall answers from LanceDB with the very context the unbounded caches give,
and what is resident stays within the budget (the copies' and LanceDB's own accounting)."""

from __future__ import annotations

import pytest

from helpers import WIKI_SESSIONS
from trimem.server.settings import Settings
from trimem.tools.recall import recall
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

QUERIES = ["Where did Ana move for her new job?", "What is the name of Ana's dog?",
           "What does Ben think of Berlin?"]


def answers(rt: Runtime) -> list[tuple]:
    out = []
    for strategy in ("plain", "hybrid", "workspace", "wiki", "auto"):
        for q in QUERIES:
            r = recall(rt, q, strategy=strategy)
            out.append((strategy, q, r.context, r.route_reason, [s.id for s in r.sources]))
    return out


@pytest.mark.slow
def test_a_tiny_budget_gives_the_same_recall_and_stays_within_it(tmp_path):
    home = str(tmp_path / "home")
    full = Runtime(Settings(home=home).to_config())
    try:
        for sid, when, turns in WIKI_SESSIONS:
            remember(full, [Message(content=t, speaker=sp, ref=f"{sid}:{i}")
                            for i, (sp, t) in enumerate(turns)], session_id=sid, session_time=when)
        assert full.curation.wait_idle(300)
        want = answers(full)
        assert full.space("default").sources._snapshot() is not None   # the unbounded run used copies
        assert full.context("default").get("workspace.snapshot").current() is not None
    finally:
        full.close()
    tiny = Runtime(Settings(home=home, max_ram_mb=0.01, curation=False).to_config())
    try:
        got = answers(tiny)
        budget = tiny.store.budget
        assert budget.total == int(0.01 * 2**20)
        assert tiny.space("default").sources._snapshot() is None   # no copy fits: LanceDB answered
        assert tiny.context("default").get("workspace.snapshot").current() is None   # nor the graph
        assert budget.copies.used <= budget.copies.limit
        # LanceDB evicts lazily: its caches may pass their share by an entry, not the budget
        assert budget.copies.used + budget.lance_bytes() <= budget.total
    finally:
        tiny.close()
    assert got == want
