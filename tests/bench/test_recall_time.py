"""``bench/recall_time.py``: recall latency on a store ``bench/scale.py`` filled, as it is."""

from __future__ import annotations

from argparse import Namespace

from trimem.bench import recall_time
from trimem.tools import recall as recall_tool


def test_it_times_the_stored_namespace_and_leaves_the_tool_as_it_was(scale_store):
    inner = recall_tool._run
    args = Namespace(home=scale_store, strategy="auto", budget=500, queries=4, warmup=1,
                     stored=120, seed=7, source_copy_max_rows=0)
    out = recall_time.run(args)
    assert recall_tool._run is inner                    # the tool is left as it was
    assert out["stored"] == 120 and out["source_copy_max_rows"] == 0
    assert 0 < out["p50"] <= out["p95"]
    assert out["voters_p50"] == {}                      # nothing curated: auto answers with plain
