"""Consolidation clusters in a child process: the same labels as in process, a clear error and
nothing written when the child fails, and a server that consolidated never imported umap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers import listing, payload

from trimem.strategies.hybrid import cluster_proc
from trimem.strategies.hybrid.cluster_child import labels_here

pytestmark = [pytest.mark.slow]
HEAVY = ("umap", "hdbscan", "numba", "sklearn")
SAID = ["Ana plays the violin in a small orchestra", "Ben collects vintage postcards from Japan",
        "Ana is learning to surf on weekends", "Ben volunteers at the animal shelter",
        "Ana bakes sourdough bread every Sunday", "Ben reads science fiction novels at night",
        "Ana grows tomatoes on her balcony", "Ben repairs old bicycles in his garage"]


async def store(client) -> None:
    """Three sessions that each state the same eight facts: 24 facts (UMAP's path), clusters
    of repeated ones (merges)."""
    for k, when in enumerate(["2023-01-10T10:00:00", "2023-03-10T10:00:00", "2023-06-10T10:00:00"]):
        sid = f"c{k}"
        msgs = [{"content": f"turn {j} of {sid}: {t}", "speaker": t.split()[0], "ref": f"{sid}:{j}"}
                for j, t in enumerate(SAID)]
        facts = [dict(zip(("subject", "relation", "object"), t.split(" ", 2)), refs=[f"{sid}:{j}"],
                      context="said in passing", timestamp=when) for j, t in enumerate(SAID)]
        payload(await client.call_tool("remember", {"messages": msgs, "session_id": sid,
                                                    "session_time": when, "curated": {"facts": facts}}))


def blobs(n_per: int, centres: int, seed: int = 5) -> np.ndarray:
    """Unit vectors around ``centres`` random directions, float32 as stored."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, 384))
    x = np.repeat(c, n_per, axis=0) + 0.35 * rng.standard_normal((centres * n_per, 384))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


@pytest.mark.filterwarnings("ignore:n_jobs value")
@pytest.mark.parametrize(("vecs", "mcs"), [(blobs(30, 4), 5), (blobs(3, 4), 2), (blobs(1, 3), 10)],
                         ids=["umap", "raw-vectors", "too-few"])
def test_the_child_answers_the_labels_computed_in_process(vecs, mcs):
    here = labels_here(vecs, mcs)
    [child] = cluster_proc.labels_in_child([vecs], mcs)
    assert child.dtype.kind == "i" and np.array_equal(child, here)
    if len(vecs) >= 16:
        assert len(set(child.tolist()) - {-1}) >= 2   # a real clustering, not all noise


@pytest.mark.filterwarnings("ignore:n_jobs value")
def test_one_child_answers_every_matrix_in_order(monkeypatch):
    """Both kinds of memory in one child (its imports and numba's compilation paid once): each
    matrix's labels as in process, in the order given; one too small for a cluster is noise
    without being sent."""
    started: list[list[str]] = []
    real = cluster_proc.subprocess.run

    def run(cmd, *a, **kw):
        started.append(cmd)
        return real(cmd, *a, **kw)
    monkeypatch.setattr(cluster_proc.subprocess, "run", run)
    mats = [blobs(30, 4), blobs(1, 3), blobs(3, 4, seed=9)]
    got = cluster_proc.labels_in_child(mats, 5)
    assert len(started) == 1
    assert [list(g) for g in got] == [list(labels_here(m, 5)) for m in mats]
    assert got[1].tolist() == [-1, -1, -1]


def test_a_failing_child_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(cluster_proc, "CHILD", "trimem.strategies.hybrid.no_such_module")
    with pytest.raises(cluster_proc.ClusteringFailed, match="exited with status 1.*no_such_module"):
        cluster_proc.labels_in_child([blobs(10, 2)], 2)


@pytest.mark.anyio
async def test_a_consolidation_whose_child_fails_writes_nothing(client, server, home, monkeypatch):
    await store(client)
    rt = server.runtime
    assert rt.curation.wait_idle(60)
    assert rt.space("default").upkeep.wait(60, flush=True)
    before = listing(home)
    monkeypatch.setattr(cluster_proc, "CHILD", "trimem.strategies.hybrid.no_such_module")
    res = await client.call_tool("consolidate", {"min_cluster_size": 2})
    assert res.is_error and "hybrid consolidation stopped before writing anything: the clustering process" in str(res.content)
    assert rt.space("default").upkeep.wait(60, flush=True)
    assert listing(home) == before


SERVER = textwrap.dedent("""
    import anyio, json, sys
    from mcp import Client
    from helpers import payload, listing
    from test_cluster_child import store
    from trimem.server.app import build_server
    from trimem.server.settings import Settings

    async def main():
        server = build_server(Settings(home=sys.argv[1]))
        async with Client(server) as client:
            await store(client)
            assert server.runtime.curation.wait_idle(60)
            out = payload(await client.call_tool("consolidate", {"min_cluster_size": 2}))
        print(json.dumps({"clusters": out["clusters"], "operations": len(out["operations"]),
                          "loaded": sorted(m for m in sys.modules if m.split(".")[0] in %r)}))

    anyio.run(main)
""" % (HEAVY,))


def test_a_server_that_consolidated_never_imported_the_clustering_libraries(tmp_path):
    tests = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [tests, os.path.join(tests, "strategies", "hybrid"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", SERVER, str(tmp_path / "home")], env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["clusters"] > 0 and out["operations"] > 0   # it did cluster, and merged
    assert out["loaded"] == []
