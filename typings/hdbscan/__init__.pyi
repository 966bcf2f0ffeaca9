# Type stub for the one hdbscan API trimem calls (strategies/hybrid/consolidate.py); see
# typings/umap/__init__.pyi for why.
from typing import Any

import numpy as np

class HDBSCAN:
    def __init__(self, *, min_cluster_size: int = ..., min_samples: int | None = ...,
                 metric: str = ..., cluster_selection_method: str = ..., **kwargs: Any) -> None: ...
    def fit_predict(self, X: Any, y: Any = ...) -> np.ndarray: ...
