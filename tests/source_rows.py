"""Synthetic source rows (small vectors, exact ties, missing timestamps, speakers, metadata) and
the source filters the storage tests compare the in-process copies and LanceDB over."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np

from trimem.storage import Source, SourceFilter

DIM = 16
T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def turn_rows(n: int, start: int = 0, seed: int = 0) -> list[dict]:
    out = []
    for i in range(start, start + n):
        v = np.random.default_rng((seed, i)).standard_normal(DIM).astype(np.float32)
        if i % 7 == 0:
            v[:] = 1.0   # many exact ties: the order must still agree
        out.append({"id": f"src_{i:04d}", "session_id": f"s{i % 3}", "seq": i, "ref": f"r{i}",
                    "speaker": "user" if i % 2 else "assistant",
                    "timestamp": None if i % 11 == 0 else T0 + timedelta(hours=i),
                    "text": f"turn {i}", "metadata": {"n": i} if i % 5 == 0 else None,
                    "created_at": T0, "vector": v * (1 + i % 4)})   # not unit: cosine still
    return out


FILTERS = [None, SourceFilter(session_id="s1"), SourceFilter(since=T0 + timedelta(hours=50)),
           SourceFilter(since=T0 + timedelta(hours=20), until=T0 + timedelta(hours=90)),
           SourceFilter(session_id="s2", until=T0 + timedelta(hours=100)),
           SourceFilter(session_id="no such session"), SourceFilter(speakers=frozenset({"user"})),
           SourceFilter(session_id="s1", speakers=frozenset({"assistant", "nobody"})),
           SourceFilter(speakers=frozenset({"user' OR speaker = 'assistant"})),
           SourceFilter(speakers=frozenset())]


def source(**fields) -> Source:
    """A stored message as storage returns it, with these fields (the rest empty): for tests of
    the code that reads sources without a store."""
    base = {"id": "m0", "namespace": "ns", "session_id": "s1", "seq": 0, "ref": None,
            "speaker": None, "timestamp": None, "text": "", "metadata": None,
            "embed_model": None, "created_at": None}
    return Source(**(base | fields))
