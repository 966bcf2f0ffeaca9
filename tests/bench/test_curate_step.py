"""``bench/curate_step.py``: one strategy's curation step, session by session, on a store."""

from __future__ import annotations

from argparse import Namespace

from trimem.bench import curate_step, scale
from trimem.server.settings import Settings
from trimem.strategies.wiki import store
from trimem.tools.runtime import Runtime


def test_it_curates_each_new_session_with_the_one_strategy_and_times_it(scale_store):
    args = Namespace(home=scale_store, namespace=scale.NS, strategy="wiki", sessions=2, seed=77)
    out = curate_step.run(args)
    assert len(out["sessions"]) == len(out["wall_s"]) == len(out["cpu_s"]) == 2
    assert min(out["wall_s"]) > 0 and min(out["cpu_s"]) > 0
    rt = Runtime(Settings(home=scale_store, curation=False).to_config())
    try:
        space = rt.space(scale.NS)
        for sid in out["sessions"]:   # the wiki curated it; the other strategies did not
            assert store.snapshots(space, eq={"session_id": sid}, columns=["id"])
            assert not space.memories.where({"session_id": sid})
    finally:
        rt.close()
