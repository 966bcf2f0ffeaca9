"""The two-machine benchmark, small (bench/s3_procs.py): two worker processes, each with its own
process-local folders, remember one exchange per call into a namespace of their own, into
sessions of their own in a shared namespace and into one session both append to, then recall
(plain and auto) from both. A fresh runtime then finds every acknowledged message exactly once,
in the namespace it was written to and nowhere else, at its own position in its session, and no
recall from a worker's own namespace quoted the other's messages."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("curation", [False, True], ids=["stored", "curated"])
def test_two_machines_share_a_bucket_and_keep_their_namespaces_apart(curation):
    """Curated: each worker's server curates what it stored (the shared namespace by both, in
    turns), every session ends curated, and no derived row of a worker's own namespace quotes
    the other's messages."""
    pytest.importorskip("moto.server", reason='pip install "moto[server]"')
    done = subprocess.run([sys.executable, "-m", "trimem.bench.s3", "--procs", "2",
                           "--exchanges", "4", "--queries", "2"]
                          + (["--curation"] if curation else []),
                          capture_output=True, text=True, timeout=600)
    report = json.loads(done.stdout)
    check = report["check"]
    assert report["worker_failures"] == {}
    assert check["messages"] == 2 * 4 * 3 * 2          # workers x exchanges x calls x messages
    problems = {k: v for k, v in check.items() if isinstance(v, int) and k != "messages" and v}
    assert problems == {}, check["detail"]
    assert [w["recall_leaks"] for w in report["workers"]] == [[], []]
    assert all(w["recalls"] == 2 * 2 * 2 for w in report["workers"])
    assert report["ok"] and done.returncode == 0
    if curation:
        assert {"uncurated", "derived_leaked"} <= set(check)
        assert all(w["curation_drained"] and w["curation_drain_s"] > 0
                   for w in report["workers"])
