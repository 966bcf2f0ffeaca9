"""``bench/resident.py``: resident memory and the copies' charges of recalls on a store as it is."""

from __future__ import annotations

from argparse import Namespace

from trimem.bench import resident


def test_it_reports_each_strategys_burst_and_each_copys_charge(scale_store, monkeypatch):
    from trimem.storage import allocators

    monkeypatch.setattr(allocators, "IDLE_TRIM_S", 0.1)
    args = Namespace(home=scale_store, strategies="plain,auto", recalls=3, budget=500,
                     stored=120, seed=7)
    out = resident.run(args)
    assert out["stored"] == 120 and list(out["strategies"]) == ["plain", "auto"]
    for burst in out["strategies"].values():
        assert 0 < burst["p50"] and 0 < burst["rss_idle_mb"] <= burst["hwm_mb"]
    assert any(name.startswith("SourceSnapshot") for name in out["copies_mb"])   # plain's turns
    assert out["copies_total_mb"] == round(sum(out["copies_mb"].values()), 1) > 0
