"""Trajectory append, bounded length and claim edit ops (add / revise / deprecate)."""

import json
from datetime import datetime, timedelta, timezone

import numpy as np

from trimem.strategies.wiki import claims, trajectories as trj

T0 = datetime(2023, 1, 1, tzinfo=timezone.utc)


def snap(k, text, vec, session="s", idx=0, days=0):
    when = T0 + timedelta(days=days)
    row = {"id": f"src{k}", "session_id": session, "seq": idx, "speaker": "Ana", "ref": f"r{k}",
           "timestamp": when, "text": text}
    v = np.asarray(vec, dtype=np.float32)
    s = claims.build_snapshots(session, [row], when, {row["id"]: v / np.linalg.norm(v)})[0]
    return dict(s, idx=idx)


def test_revise_and_deprecate_keep_history():
    b = trj.Builder()
    v = [1.0] + [0.0] * 383
    b.append(snap(1, "I moved to Berlin for my job.", v, "s1", 0, 0))
    b.append(snap(2, "I just moved to Lisbon with my job.", v, "s2", 0, 30))
    b.append(snap(3, "I am no longer living in Lisbon, I moved out.", v, "s3", 0, 60))
    assert len(b.trajs) == 1
    ops = [(c["text"], c["op"], c["status"]) for c in b.claims.values()]
    assert ops[0][1:] == ("add", "revised")
    assert ops[1][1:] == ("revise", "revised") or ops[1][1:] == ("revise", "deprecated")
    assert ops[2][1] == "deprecate"
    assert all(c["source_id"] for c in b.claims.values())      # nothing deleted, all sourced


def test_unrelated_snapshot_starts_a_new_trajectory_and_length_is_bounded():
    b = trj.Builder(m=3)
    v1, v2 = [1.0] + [0.0] * 383, [0.0, 1.0] + [0.0] * 382
    for i in range(4):
        b.append(snap(i, "We went hiking on the mountain trail again.", v1, "s1", i, 0))
    b.append(snap(9, "My tax forms confuse the accountant.", v2, "s9", 0, 300))
    sizes = sorted(len(T.snapshots) for T in b.trajs.values())
    assert sizes == [1, 1, 3]
    cont = [T for T in b.trajs.values() if T.continues]
    assert len(cont) == 1 and b.trajs[cont[0].continues].closed


def test_state_round_trip_gives_the_same_result():
    v = [1.0] + [0.0] * 383
    a = trj.Builder()
    a.append(snap(1, "I moved to Berlin.", v, "s1", 0, 0))
    b = trj.Builder()
    for T in a.trajs.values():
        b.load_state(T.id, trj.Builder.dump_state(T))
    s2 = snap(2, "I moved to Lisbon.", v, "s2", 0, 10)
    assert a.append(dict(s2))[0] == b.append(dict(s2))[0]
    assert json.loads(trj.Builder.dump_state(a.trajs[next(iter(a.trajs))]))["slots"] == \
        json.loads(trj.Builder.dump_state(b.trajs[next(iter(b.trajs))]))["slots"]
