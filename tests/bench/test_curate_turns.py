"""``bench/curate_turns.py``: one namespace curated by one process, or by two taking turns."""

from __future__ import annotations

from argparse import Namespace

from trimem.bench import curate_turns, scale
from trimem.server.settings import Settings
from trimem.tools.runtime import Runtime


def test_it_curates_every_new_session_in_turns_and_times_each_step(scale_store):
    args = Namespace(home=scale_store, namespace=scale.NS, sessions=3, processes=2, seed=78,
                     workers=False)
    out = curate_turns.run(args)
    assert len(out["sessions"]) == len(out["wall_s"]) == 3
    assert min(out["wall_s"]) > 0
    spans = out["spans"]
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    rt = Runtime(Settings(home=scale_store, curation=False).to_config())
    try:
        space = rt.space(scale.NS)
        for sid in out["sessions"]:   # every strategy curated it
            row = space.sessions.get(sid)
            assert row is not None and row.curation == "done"
            assert space.memories.where({"session_id": sid})
    finally:
        rt.close()


def test_with_workers_two_processes_take_the_turn_in_alternation(scale_store):
    """Each process's worker takes the turn as it gets it: with sessions waiting in both, the
    turn passes from one to the other (``storage/curating.py``'s claims)."""
    args = Namespace(home=scale_store, namespace=scale.NS, sessions=4, processes=2, seed=79,
                     workers=True)
    out = curate_turns.run(args)
    assert sorted(out["process"]) == [0, 0, 1, 1]
    spans = out["spans"]
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))
    assert out["process"][:2] in ([0, 1], [1, 0]), out["process"]
