"""``bench/scale.py --live``: remember a session, recall at once, on a real store."""

from __future__ import annotations

from datetime import timedelta

from trimem.bench.live import measure_live


def test_live_rounds_store_their_own_sessions_and_drain(server):
    rt = server.runtime
    space = rt.space("live")
    out = measure_live(rt, space, "live", "auto", ["What does Ana do for work?"], 2, seed=3)
    assert out["rounds"] == 2 and out["p50"] > 0 and 0 <= out["while_curating"] <= 2
    assert rt.curation.wait_idle(0)                       # drained before returning
    sessions = space.sessions.times()
    assert len(sessions) == 2 and all(s.startswith("live-") for s in sessions)
    t = sorted(sessions.values())
    assert t[1] - t[0] == timedelta(hours=6)                # dated after each other
    assert all((row := space.sessions.get(s)) and row.curation == "done" for s in sessions)
