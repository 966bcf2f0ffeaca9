"""When ``auto`` abstains: the best evidence is no closer to the query than the namespace's own
turns are to one another.

The signal is the dense cosine ``s`` between the query and its best-matching turn (within the
recall's time window). What counts as "close" is read off the namespace itself, not fixed: the
cosines between pairs of its turns, drawn at random (``SAMPLE`` turns, so ``SAMPLE * (SAMPLE-1)
/ 2`` pairs), have a mean ``mu`` and a spread ``sd``. Two turns of one memory share speakers,
people and topics, so ``mu`` is what mere membership in this memory is worth; a query whose
best turn does not beat it is about something the memory does not hold. The recall abstains when

    z = (s - mu) / sd < 0

with no constant fitted to any benchmark: the threshold is the namespace's own mean, and a
model whose cosines run higher or lower moves ``mu`` with it. (Measured on the dev conversations
in bench/README.md: the off-topic questions of bench/offtopic.txt and the benchmark's
answerable ones.) Below ``MIN_TURNS`` turns there are too few pairs to say what is typical, and
the recall abstains only when it found nothing. The calibration is cached per namespace handle
and redone when the namespace has grown or shrunk by a quarter (``REFIT``).

The flag never changes the context: the evidence is still returned, ranked as before.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

SAMPLE = 256
MIN_TURNS = 8
REFIT = 0.25

_CAL: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def calibration(space) -> dict | None:
    """``{"turns", "mu", "sd"}`` of the namespace's pairwise turn cosines, or None (too few)."""
    n = space.count_sources()
    with _LOCK:
        cal = _CAL.get(space)
    if cal is not None and abs(n - cal["turns"]) <= REFIT * cal["turns"]:
        return cal if cal["sd"] > 0 else None
    if n < MIN_TURNS:
        return None
    v = space.sample_source_vectors(SAMPLE)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    v = v / np.where(norms > 0, norms, 1.0)
    pairs = (v @ v.T)[np.triu_indices(len(v), 1)]
    cal = {"turns": n, "mu": float(pairs.mean()), "sd": float(pairs.std())}
    with _LOCK:
        _CAL[space] = cal
    return cal if cal["sd"] > 0 else None


def judge(space, best_cosine: float | None) -> dict:
    """Whether the evidence is off the query: ``{"abstain", "why", ...}`` for trace and reason."""
    if best_cosine is None:
        return {"abstain": True, "why": "no turn matched"}
    cal = calibration(space)
    if cal is None:
        return {"abstain": False, "best_cosine": round(best_cosine, 4),
                "why": f"fewer than {MIN_TURNS} turns: nothing to calibrate against"}
    z = (best_cosine - cal["mu"]) / cal["sd"]
    out = {"abstain": z < 0, "best_cosine": round(best_cosine, 4),
           "namespace_mean": round(cal["mu"], 4), "namespace_sd": round(cal["sd"], 4),
           "z": round(z, 3), "sample_turns": min(SAMPLE, cal["turns"])}
    out["why"] = (f"the best turn's cosine to the query ({best_cosine:.2f}) is below the mean "
                  f"cosine between two turns of this namespace ({cal['mu']:.2f})" if z < 0 else
                  f"the best turn's cosine to the query ({best_cosine:.2f}) is above the "
                  f"namespace's mean pairwise cosine ({cal['mu']:.2f}) by {z:.1f} sd")
    return out
