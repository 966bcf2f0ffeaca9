"""A small store as ``bench/scale.py`` fills it, for the benchmarks that time a store as it is."""

from __future__ import annotations

import pytest

from trimem.bench import scale
from trimem.bench.synth import Synth, Timed
from trimem.server.settings import Settings
from trimem.tools.runtime import Runtime

SCALE_TURNS = 120


@pytest.fixture
def scale_store(tmp_path) -> str:
    """A home whose ``scale`` namespace holds the first ``SCALE_TURNS`` turns of the synthetic
    stream (seed 7), stored with curation off."""
    rt = Runtime(Settings(home=str(tmp_path), curation=False).to_config())
    try:
        space = rt.space(scale.NS)
        scale.ingest(rt, space, Synth(seed=7).sessions(), [], SCALE_TURNS, Timed(rt.embed))
    finally:
        rt.close()
    return str(tmp_path)
