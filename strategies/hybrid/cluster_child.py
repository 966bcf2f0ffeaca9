"""Consolidation's clustering (paper appendix C), the one implementation, and the child process
that runs it for the server (:mod:`.cluster_proc`).

Run as ``python -m trimem.strategies.hybrid.cluster_child MIN_CLUSTER_SIZE``: reads matrices
(``np.save`` format, no pickles, one after another) on stdin until it ends, writes each one's
labels (``np.save``, int64, -1 = noise) on stdout in the same order and exits. Importing umap,
numba, sklearn and hdbscan took about 265 MB that a process keeps until it exits (measured
2026-12-06: 416 -> 682 MB resident); here they are gone as soon as the labels are written.
Anything the libraries print goes to stderr, so stdout holds the labels only.
"""

from __future__ import annotations

import io
import sys
import warnings

import numpy as np

from .cluster_proc import too_few
from .consolidate import MIN_UMAP, _exact_neighbours


def labels_here(vecs: np.ndarray, min_cluster_size: int) -> np.ndarray:
    """HDBSCAN labels (-1 = noise) of UMAP-reduced ``vecs``, in this process."""
    n = len(vecs)
    if too_few(n, min_cluster_size):
        return np.full(n, -1)
    import hdbscan  # lazy: hdbscan, imported in the clustering child only

    if n >= MIN_UMAP:
        import umap  # lazy: umap (seconds to import), imported in the clustering child only

        k = min(10, n - 1)
        reducer = umap.UMAP(n_neighbors=k, n_components=5, metric="cosine", min_dist=0.0,
                            random_state=42, n_jobs=1, **_exact_neighbours(vecs, k))
        with warnings.catch_warnings():   # handed neighbours: no index for transform(), unused
            warnings.filterwarnings("ignore", message=r"precomputed_knn\[2\]")
            emb = reducer.fit_transform(vecs)
    else:
        emb = vecs
    return hdbscan.HDBSCAN(min_cluster_size=min_cluster_size, min_samples=1, metric="euclidean",
                           cluster_selection_method="eom").fit_predict(emb)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit():
        print("usage: python -m trimem.strategies.hybrid.cluster_child MIN_CLUSTER_SIZE "
              "< matrices.npy > labels.npy", file=sys.stderr)
        return 2
    out = sys.stdout.buffer
    sys.stdout = sys.stderr   # a library's print must not land among the labels
    data = sys.stdin.buffer.read()
    given, buf = io.BytesIO(data), io.BytesIO()
    while given.tell() < len(data):
        vecs = np.load(given, allow_pickle=False)
        labels = np.asarray(labels_here(vecs, int(argv[0])), dtype=np.int64)
        np.save(buf, labels, allow_pickle=False)
    out.write(buf.getvalue())
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
