"""Per-namespace state has one owner: the runtime's namespace context (``strategies/context.py``).

An ``auto`` recall fills the context of its namespace (the strategies known to have memory, the
voter pool, the strategies' caches), another runtime's contexts are its own, and
``Runtime.close`` shuts the pools down and drops every cache: no state outlives it.
"""

from __future__ import annotations

from helpers import WIKI_SESSIONS
from trimem.server.settings import Settings
from trimem.tools.recall import recall
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime


def test_auto_keeps_its_state_in_the_runtimes_context_and_close_drops_it(tmp_path):
    rt = Runtime(Settings(home=str(tmp_path / "one")).to_config())
    other = Runtime(Settings(home=str(tmp_path / "two"), curation=False).to_config())
    try:
        for sid, when, turns in WIKI_SESSIONS:
            remember(rt, [Message(content=t, speaker=sp, ref=f"{sid}:{i}")
                          for i, (sp, t) in enumerate(turns)], session_id=sid, session_time=when)
        assert rt.curation.wait_idle(300)
        out = recall(rt, "Where did Ana move for her new job?", strategy="auto")
        assert out.route_reason.startswith("auto → fusion of "), out.route_reason
        ctx = rt.context("default")
        assert ctx is rt.env("default").ns and ctx.space is rt.space("default")
        assert {"hybrid", "workspace", "wiki"} <= ctx.ready
        assert ctx.get("wiki") is not None and ctx.get("workspace.snapshot") is not None
        pool = ctx.pool(1)                          # the voters ran in the context's pool
        threads = list(pool._threads)
        assert threads and all(t.is_alive() for t in threads)
        assert rt.namespace_lock("default") is ctx.lock
        assert rt.context("elsewhere") is not ctx

        # another runtime (another home, same namespace name) shares nothing with this one
        remember(other, [Message(content="A note.", ref="n1")], session_id="s")
        assert other.context("default") is not ctx and not other.context("default").ready
    finally:
        other.close()
        rt.close()
    assert not any(t.is_alive() for t in threads)   # the pool was shut down
    assert ctx.get("wiki") is None and not ctx.ready   # the caches were dropped
    assert rt.context("default") is not ctx         # a later call starts afresh
    rt.close()
