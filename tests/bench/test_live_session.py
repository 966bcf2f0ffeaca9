"""``bench/live_session.py``: a session growing an exchange at a time, curated after each."""

from __future__ import annotations

import pytest

from trimem.bench import live_session


def test_it_times_every_strategy_at_each_curation_of_a_growing_session(tmp_path):
    out = live_session.run(str(tmp_path / "home"), exchanges=3)
    assert out["exchanges"] == 3 and out["wall_s"] > 0
    assert {"hybrid", "wiki", "workspace"} <= set(out["strategies"])
    assert all(s["total_s"] > 0 for s in out["strategies"].values())
    again = live_session.run(str(tmp_path / "again"), exchanges=3)
    assert again["hybrid_memories"] == out["hybrid_memories"]   # the same memories, bit for bit
    with pytest.raises(SystemExit):
        live_session.run(str(tmp_path / "home"), exchanges=1)   # not a new folder
