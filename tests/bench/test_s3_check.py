"""``bench/s3_check.py``'s curation counters find what they count: a session left uncurated, and a
derived row of a worker's own namespace that quotes another worker's message (real LanceDB in a
temp folder, the real embedder; the checker reads a store the same way on a bucket)."""

from __future__ import annotations

from collections import Counter

from trimem.bench.s3_check import _curated
from trimem.server.settings import Settings
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime


def test_the_curation_counters_see_an_uncurated_session_and_a_quote_across_namespaces(tmp_path):
    rt = Runtime(Settings(home=str(tmp_path), curation=False).to_config())
    try:
        msgs = [Message(content="Mira adopted a grey cat named Pixel in May (zzm1xownx0u).",
                        speaker="user", ref="m1.own.0.u"),
                Message(content="A quote of the other machine: zzm2xownx0a, about the garden.",
                        speaker="assistant", ref="m1.own.0.a")]
        remember(rt, msgs, "s1", None, "own-m1")
        space = rt.space("own-m1")
        row = space.sessions.get("s1")
        assert row is not None
        space.sessions.set_curation("s1", "queued", row.n_messages)
        out, detail = Counter(uncurated=0, derived_leaked=0), []
        _curated(rt, space, "own-m1", ["m1", "m2"], out, detail)
        assert out["uncurated"] == 1 and out["derived_leaked"] == 0    # sources are not derived
        rt.curation.curate_now("own-m1", "s1")
        out, detail = Counter(uncurated=0, derived_leaked=0), []
        _curated(rt, space, "own-m1", ["m1", "m2"], out, detail)
        assert out["uncurated"] == 0 and out["derived_leaked"] > 0, detail
        out = Counter(uncurated=0, derived_leaked=0)
        _curated(rt, space, "own-m1", ["m1"], out, [])                 # no other worker
        assert out["derived_leaked"] == 0
    finally:
        rt.close(30)
