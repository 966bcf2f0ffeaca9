"""The plain strategy: turn-level BM25 + dense search fused by RRF (the baseline)."""
