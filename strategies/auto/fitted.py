"""Fusion parameters for ``auto``. Placeholder until bench/fit_auto.py writes the fitted ones."""

EXPAND = 2.0          # each strategy ranks for EXPAND x the caller's budget
K = 60.0              # RRF constant
WEIGHTS = {kind: {"plain": 1.0, "hybrid": 1.0, "workspace": 1.0, "wiki": 1.0}
           for kind in ("temporal", "hypothetical", "list", "multi", "single")}
FIT = {}
