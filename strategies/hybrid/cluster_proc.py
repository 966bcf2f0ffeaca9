"""Consolidation's clustering in a short-lived child process (:mod:`.cluster_child`), so that
the server never imports umap, numba, sklearn or hdbscan (about 265 MB resident for the
process's lifetime once imported).

The matrix goes to the child on its stdin and the labels come back on its stdout, both in
``np.save``'s format without pickles; the child computes them with :func:`.cluster_child.
labels_here`, the function a test compares it with. What it costs: each child imports umap
(~2 s CPU) and compiles UMAP's layout with numba on its first fit (~6 s CPU, which numba does
not cache), once per kind clustered, where one process paid it once. ``trimem consolidate
--dry-run`` of LoCoMo conv-26 (2026-12-06, load average ~11 on 2 cores): the same plan (27
clusters, 43 operations), 29 -> 59 s, peak resident 604 -> 330 MB in the server's process
and 333-342 MB in each child while it ran. Nothing is written before
the labels are back: a child that fails (exit status, or an answer that is not one label per
row) raises :class:`ClusteringFailed` with the end of its stderr, and the consolidation stops
there with the store as it was.
"""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import time

import numpy as np

from ..base import StrategyFailure

log = logging.getLogger(__name__)
CHILD = f"{__package__}.cluster_child"
STDERR_TAIL = 2000


def too_few(n: int, min_cluster_size: int) -> bool:
    """Fewer rows than one cluster needs: every row is noise, nothing to compute."""
    return n < max(2, min_cluster_size)


class ClusteringFailed(StrategyFailure):
    """The clustering child exited with an error or answered something else than labels."""


def labels_in_child(vecs: np.ndarray, min_cluster_size: int) -> np.ndarray:
    """HDBSCAN labels (-1 = noise) of ``vecs``, one per row, computed by a child process."""
    n = len(vecs)
    if too_few(n, min_cluster_size):   # no child for nothing to do
        return np.full(n, -1)
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(vecs), allow_pickle=False)
    cmd = [sys.executable, "-m", CHILD, str(int(min_cluster_size))]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, input=buf.getvalue(), capture_output=True, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ClusteringFailed(f"could not start the clustering process: {exc}") from exc
    tail = done.stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
    if done.returncode != 0:
        raise ClusteringFailed(f"the clustering process for {n} rows exited with status "
                               f"{done.returncode}: {tail or '(no message)'}")
    try:
        labels = np.load(io.BytesIO(done.stdout), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ClusteringFailed(f"the clustering process answered no labels ({exc}): {tail}") from exc
    if labels.shape != (n,) or labels.dtype.kind != "i":
        raise ClusteringFailed(f"the clustering process answered {labels.dtype} {labels.shape} "
                               f"for {n} rows")
    log.info("clustered %d rows in a child process in %.1f s", n, time.monotonic() - started)
    return labels
