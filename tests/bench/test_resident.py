"""``bench/resident.py``: resident memory and the copies' charges of recalls on a store as it is."""

from __future__ import annotations

from argparse import Namespace

from trimem.bench import resident, scale
from trimem.bench.synth import Synth, Timed
from trimem.server.settings import Settings
from trimem.tools.runtime import Runtime


def test_it_reports_each_strategys_burst_and_each_copys_charge(tmp_path, monkeypatch):
    from trimem.storage import allocators

    monkeypatch.setattr(allocators, "IDLE_TRIM_S", 0.1)
    rt = Runtime(Settings(home=str(tmp_path), curation=False).to_config())
    try:
        space = rt.space(scale.NS)
        scale.ingest(rt, space, Synth(seed=7).sessions(), [], 120, Timed(rt.embed))
    finally:
        rt.close()
    args = Namespace(home=str(tmp_path), strategies="plain,auto", recalls=3, budget=500,
                     stored=120, seed=7)
    out = resident.run(args)
    assert out["stored"] == 120 and list(out["strategies"]) == ["plain", "auto"]
    for burst in out["strategies"].values():
        assert 0 < burst["p50"] and 0 < burst["rss_idle_mb"] <= burst["hwm_mb"]
    assert any(name.startswith("SourceSnapshot") for name in out["copies_mb"])   # plain's turns
    assert out["copies_total_mb"] == round(sum(out["copies_mb"].values()), 1) > 0
