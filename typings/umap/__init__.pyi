# Type stub for the umap-learn API trimem calls (strategies/hybrid/consolidate.py; its test
# also fits and compares the fuzzy graphs, tests/strategies/hybrid/test_consolidate.py). umap ships
# no types; without this stub pyright infers them from umap's source and spends ~24 s of the
# type gate there. Not shipped: the wheel's package list does not include typings/.
from typing import Any

import numpy as np

class UMAP:
    def __init__(self, *, n_neighbors: int = ..., n_components: int = ..., metric: str = ...,
                 min_dist: float = ..., random_state: int | None = ..., n_jobs: int = ...,
                 **kwargs: Any) -> None: ...
    graph_: Any            # scipy.sparse matrix: the fuzzy simplicial set
    embedding_: np.ndarray
    _small_data: bool
    def fit(self, X: Any, y: Any = ...) -> UMAP: ...
    def fit_transform(self, X: Any, y: Any = ...) -> np.ndarray: ...
