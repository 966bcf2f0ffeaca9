"""Consolidation's clustering in a short-lived child process (:mod:`.cluster_child`), so that
the server never imports umap, numba, sklearn or hdbscan (about 265 MB resident for the
process's lifetime once imported).

The matrices (one per kind of memory) go to one child on its stdin and their labels come back on
its stdout, in order, all in ``np.save``'s format without pickles; the child computes them with
:func:`.cluster_child.labels_here`, the function a test compares it with. What it costs: the
child imports umap (~2 s CPU) and numba compiles UMAP's layout on its first fit (~6 s CPU, which
numba does not cache), once per consolidation. ``trimem consolidate --dry-run`` of LoCoMo
conv-26 (2026-12-06, load average ~11 on 2 cores): the same plan (27 clusters, 43 operations) as
in process; peak resident 604 -> 330 MB in the server's process and 333-342 MB in the child
while it ran; 29 s in process, 59 s with a child per kind (the imports and the compilation paid
twice), one child for both since. Nothing is written before the labels are back: a child that
fails (exit status, or an answer that is not one label per row) raises
:class:`ClusteringFailed` with the end of its stderr, and the consolidation stops there with
the store as it was.
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


def labels_in_child(matrices: list[np.ndarray], min_cluster_size: int) -> list[np.ndarray]:
    """HDBSCAN labels (-1 = noise) of each of ``matrices``, one per row, computed by one child
    process (none when no matrix has rows enough for a cluster)."""
    todo = [i for i, m in enumerate(matrices) if not too_few(len(m), min_cluster_size)]
    out = [np.full(len(m), -1) for m in matrices]
    if not todo:
        return out
    buf = io.BytesIO()
    for i in todo:
        np.save(buf, np.ascontiguousarray(matrices[i]), allow_pickle=False)
    rows = sum(len(matrices[i]) for i in todo)
    cmd = [sys.executable, "-m", CHILD, str(int(min_cluster_size))]
    started = time.monotonic()
    try:
        done = subprocess.run(cmd, input=buf.getvalue(), capture_output=True, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ClusteringFailed(f"could not start the clustering process: {exc}") from exc
    tail = done.stderr.decode("utf-8", "replace").strip()[-STDERR_TAIL:]
    if done.returncode != 0:
        raise ClusteringFailed(f"the clustering process for {rows} rows exited with status "
                               f"{done.returncode}: {tail or '(no message)'}")
    answer = io.BytesIO(done.stdout)
    for i in todo:
        n = len(matrices[i])
        try:
            labels = np.load(answer, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise ClusteringFailed(f"the clustering process answered no labels ({exc}): {tail}") from exc
        if labels.shape != (n,) or labels.dtype.kind != "i":
            raise ClusteringFailed(f"the clustering process answered {labels.dtype} "
                                   f"{labels.shape} for {n} rows")
        out[i] = labels
    if answer.read(1):
        raise ClusteringFailed("the clustering process answered more than it was asked")
    log.info("clustered %d rows in %d matrices in a child process in %.1f s", rows, len(todo),
             time.monotonic() - started)
    return out
