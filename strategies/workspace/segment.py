"""Local threads (TrawMem section 4.1): contiguous turns of one session about one event.

The paper segments with an LLM and lets it write the thread head ``a_j``. Without an LLM (the
default) this module does both deterministically; choices the paper leaves open:

- **Boundaries** (``topic`` scheme): TextTiling (Hearst, 1997) on the unit vectors. For every gap
  between turns i and i+1 the cosine between the mean vector of the ``window`` turns before and the
  ``window`` turns after is the gap's cohesion; a gap's depth is how far its cohesion lies below the
  highest cohesion reachable on each side (left peak - c + right peak - c). Gaps are accepted
  deepest first while the depth is at least ``mean(depth) + depth_k * std(depth)`` and both resulting
  pieces keep ``min_len`` turns; then any piece longer than ``max_len`` is split at its deepest gap.
  Defaults (window 3, min 3, max 10) give LoCoMo threads of about six turns, the size that yields
  the paper's ~145 candidate units from a 24-thread neighbourhood.
- **Fixed** scheme (the paper's "Fixed Seg." ablation): consecutive chunks of ``fixed_len`` turns
  (6, the mean topic-thread length, so the ablation changes only where the cuts fall).
- **Head** without an LLM: extractive, the unit closest to the thread centroid, prefixed with the
  speaker and cut to 160 characters. The head vector ``h_j`` is the normalised centroid of the
  unit vectors (it represents the whole thread better than the vector of one extracted turn).
  With an LLM configured, the head text is a one-line summary and ``h_j`` is its embedding mixed
  half-and-half with the centroid (see ``graph.llm_heads``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

WINDOW, MIN_LEN, MAX_LEN, DEPTH_K, FIXED_LEN, HEAD_CHARS = 3, 3, 10, 0.0, 6, 160


@dataclass
class Segment:
    start: int          # index of the first unit (in session order)
    end: int            # index one past the last unit
    head: str           # thread head text a_j
    vector: np.ndarray  # thread vector h_j (unit length)
    central: int        # index of the unit the extractive head was taken from


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def cohesion(vectors: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Cosine between the windows before and after every gap (length n - 1)."""
    n = len(vectors)
    out = np.zeros(max(n - 1, 0), dtype=np.float32)
    for g in range(n - 1):
        left = _unit(vectors[max(0, g + 1 - window):g + 1].mean(axis=0))
        right = _unit(vectors[g + 1:g + 1 + window].mean(axis=0))
        out[g] = float(left @ right)
    return out


def depth_scores(coh: np.ndarray) -> np.ndarray:
    """TextTiling depth: (left peak - c) + (right peak - c), climbing while cohesion rises."""
    depth = np.zeros_like(coh)
    for g, c in enumerate(coh):
        lp, i = c, g
        while i > 0 and coh[i - 1] >= lp:
            i -= 1
            lp = coh[i]
        rp, i = c, g
        while i < len(coh) - 1 and coh[i + 1] >= rp:
            i += 1
            rp = coh[i]
        depth[g] = (lp - c) + (rp - c)
    return depth


def topic_boundaries(vectors: np.ndarray, window: int = WINDOW, min_len: int = MIN_LEN,
                     max_len: int = MAX_LEN, depth_k: float = DEPTH_K) -> list[int]:
    """Sorted cut positions b (a thread ends before unit b)."""
    n = len(vectors)
    if n < 2 * min_len:
        return []
    depth = depth_scores(cohesion(vectors, window))
    thr = float(depth.mean() + depth_k * depth.std())
    cuts: list[int] = []
    for g in np.argsort(-depth, kind="stable"):
        if depth[g] < thr or depth[g] <= 0:
            break
        b = int(g) + 1
        edges = sorted(cuts + [0, n])
        lo = max(e for e in edges if e < b) if any(e < b for e in edges) else 0
        hi = min(e for e in edges if e > b)
        if b - lo >= min_len and hi - b >= min_len:
            cuts.append(b)
    # split what is still too long at its deepest admissible gap
    changed = True
    while changed:
        changed = False
        edges = sorted(set(cuts + [0, n]))
        for lo, hi in zip(edges, edges[1:]):
            if hi - lo > max_len:
                inner = range(lo + min_len, hi - min_len + 1)
                b = max(inner, key=lambda x: depth[x - 1]) if len(inner) else (lo + hi) // 2
                cuts.append(b)
                changed = True
                break
    return sorted(set(cuts))


def fixed_boundaries(n: int, length: int = FIXED_LEN) -> list[int]:
    return list(range(length, n, length))


def extractive_head(vectors: np.ndarray, speakers: list, texts: list[str]) -> tuple[str, np.ndarray, int]:
    centroid = _unit(vectors.mean(axis=0))
    i = int(np.argmax(vectors @ centroid))
    who = f"{speakers[i]}: " if speakers[i] else ""
    text = " ".join(texts[i].split())
    if len(text) > HEAD_CHARS:
        text = text[:HEAD_CHARS - 1].rstrip() + "…"
    return who + text, centroid.astype(np.float32), i


def segment(vectors: np.ndarray, speakers: list, texts: list[str], scheme: str = "topic",
            **params) -> list[Segment]:
    """Cut one session (its units in order) into threads with extractive heads."""
    n = len(vectors)
    if n == 0:
        return []
    if scheme == "fixed":
        cuts = fixed_boundaries(n, params.get("fixed_len", FIXED_LEN))
    else:
        cuts = topic_boundaries(vectors, **{k: v for k, v in params.items() if k != "fixed_len"})
    edges = [0] + cuts + [n]
    out = []
    for s, e in zip(edges, edges[1:]):
        head, vec, c = extractive_head(vectors[s:e], speakers[s:e], texts[s:e])
        out.append(Segment(s, e, head, vec, s + c))
    return out
