"""Fusion parameters for ``auto``, written by ``python -m trimem.bench.fit_auto`` (do not edit by hand).

fitted 2026-11-30 on 760 LoCoMo dev questions at 2000 tokens: R 0.876 / H 0.825 (in-sample).
"""

EXPAND = 2.0   # each strategy ranks for EXPAND x the caller's budget
K = 10.0   # reciprocal rank fusion constant
WEIGHTS = {
    "temporal": {
        "plain": 1.0,
        "hybrid": 0.5,
        "workspace": 2.0,
        "wiki": 2.0
    },
    "hypothetical": {
        "plain": 1.0,
        "hybrid": 0.5,
        "workspace": 1.0,
        "wiki": 2.0
    },
    "list": {
        "plain": 1.5,
        "hybrid": 0.5,
        "workspace": 1.0,
        "wiki": 2.0
    },
    "multi": {
        "plain": 1.0,
        "hybrid": 0.5,
        "workspace": 1.0,
        "wiki": 2.0
    },
    "single": {
        "plain": 1.0,
        "hybrid": 0.5,
        "workspace": 1.0,
        "wiki": 2.0
    }
}
FIT = {
    "summary": "fitted 2026-11-30 on 760 LoCoMo dev questions at 2000 tokens: R 0.876 / H 0.825 (in-sample)",
    "dev": {
        "auto": {
            "R": 0.8756,
            "H": 0.825,
            "multi-hop": [
                0.7184,
                0.493
            ],
            "temporal": [
                0.9567,
                0.9487
            ],
            "open-domain": [
                0.6136,
                0.5455
            ],
            "single-hop": [
                0.9262,
                0.9211
            ]
        },
        "plain": {
            "R": 0.8171,
            "H": 0.7592,
            "multi-hop": [
                0.6625,
                0.4155
            ],
            "temporal": [
                0.898,
                0.8846
            ],
            "open-domain": [
                0.5568,
                0.4545
            ],
            "single-hop": [
                0.8668,
                0.8612
            ]
        },
        "hybrid": {
            "R": 0.8526,
            "H": 0.8013,
            "multi-hop": [
                0.7189,
                0.5
            ],
            "temporal": [
                0.9503,
                0.9423
            ],
            "open-domain": [
                0.6136,
                0.5227
            ],
            "single-hop": [
                0.8868,
                0.8804
            ]
        },
        "workspace": {
            "R": 0.8413,
            "H": 0.7842,
            "multi-hop": [
                0.666,
                0.4225
            ],
            "temporal": [
                0.9247,
                0.9167
            ],
            "open-domain": [
                0.5511,
                0.4318
            ],
            "single-hop": [
                0.9003,
                0.8947
            ]
        },
        "wiki": {
            "R": 0.8677,
            "H": 0.8197,
            "multi-hop": [
                0.7054,
                0.4859
            ],
            "temporal": [
                0.9455,
                0.9423
            ],
            "open-domain": [
                0.6155,
                0.5455
            ],
            "single-hop": [
                0.9203,
                0.9163
            ]
        }
    },
    "questions_per_kind": {
        "temporal": 244,
        "hypothetical": 27,
        "list": 108,
        "multi": 74,
        "single": 307
    }
}
