"""Task-oriented roles (TrawMem section 4.2.2, eq. 5): anchor, bridge, context.

    delta_q = A x_q / 1'A x_q,   rho_q(v) = softmax(M(delta_q) f_q(v) / T_R),   phi_q(v) = delta_q' rho_q(v)

The paper leaves A, M, x_q's feature extractors and f_q open. Here they are fixed, interpretable
matrices (nothing is fitted, so nothing can leak from the test split):

- ``x_q = (1, z_temp, z_rel, z_len)``: ``z_temp`` = 1 when the query asks about time (when, what
  date, how long, before/after, since, year, month, ...), ``z_rel`` = min(1, number of relational /
  compositional cues (both, and, common, relationship, between, compare, would, likely, why,
  other, also) / 2), ``z_len`` = min(1, words / 25).
- ``A`` (rows anchor, bridge, context): anchors are always in demand (bias 1); bridges when the
  query is relational and long; context when it is temporal (the date-bearing, scene-setting turns).
- ``f_q(v)`` (6 features, each in [0, 1]): relevance (alpha min-max scaled over the candidates),
  entity overlap (share of the other neighbourhood threads that mention one of v's entities:
  capitalised words and numbers), temporal expression in v, degree of v's thread in G_H (scaled by
  the neighbourhood maximum), position (1 for a thread's first unit, 0 for its last: openers set
  the scene), hop (graph distance of v's thread from the seeds / H).
- ``M(delta) = diag(|R| delta) M0``: a role's feature weights grow with the task's demand for it;
  with uniform demand M(delta) = M0. The "no role conditioning" ablation sets delta uniform, which
  also makes phi = 1/|R| constant. ``T_R`` = 0.5.

**Named speakers** (the speaker part of the affinity and the name-free search query, used by
``recall``). A memory unit is a turn said by someone. When the query names a person and that
person is also a speaker in memory, the turns that person said are first-person evidence about them ("what
does Ana do to relax?" is answered by Ana's own "running clears my head", which shares no word
with the question). The unit's speaker is an entity of the unit, like a name in its text; the
paper's alpha_q is a pure cosine, which cannot see it (MiniLM barely separates "Ana said X" from
"Ben said X").

``speaker_match`` (``strategies/speakers.py``) is observable from the query and the stored
``speaker`` field only:
- a speaker is *named* when one of the tokens of its name (3+ letters) occurs capitalised in the
  query as a word (a possessive "'s" is stripped: "Ana's" names Ana);
- the feature is 1 for units said by a named speaker, else 0; it is all zeros when the query
  names no speaker or names every speaker among the candidates (then it separates nothing).

Recall adds ``speaker_w`` * match to the unit's own affinity (capped at 1) before the within-
thread context inheritance, so the question asked by the other speaker still inherits from the
named speaker's reply next to it (``strategy.py`` docstring). With no speakers stored (notes, or
an agent whose speakers are "user" / "assistant" and never named) nothing changes.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

ROLES = ("anchor", "bridge", "context")
T_R = 0.5
A = np.array([[1.0, 0.2, 0.0, 0.0],     # anchor
              [0.2, 0.2, 1.0, 0.6],     # bridge
              [0.3, 1.0, 0.2, 0.2]])    # context
#               rel  ent  temp  deg  pos  hop
M0 = np.array([[3.0, 0.0, 0.0, 0.0, 0.0, -1.0],   # anchor: directly relevant, near the seeds
               [1.0, 2.0, 0.0, 1.0, 0.0, 1.0],    # bridge: shares entities, well connected, reached
               [0.0, 0.5, 2.0, 0.0, 1.0, 0.0]])   # context: dates, thread openers

_TEMP = re.compile(r"\b(when|date|dates|time|times|how long|before|after|since|until|year|years|"
                   r"month|months|week|weeks|day|days|ago|first|last|recently|earlier|later|"
                   r"during|yesterday|today|tomorrow|weekend|january|february|march|april|may|"
                   r"june|july|august|september|october|november|december|\d{4})\b", re.I)
_REL = re.compile(r"\b(both|and|common|relationship|between|compare|together|would|likely|why|"
                  r"because|other|also|each|all|kinds?|types?|what do|how many)\b", re.I)
_UNIT_TEMP = re.compile(r"\b(yesterday|today|tomorrow|tonight|last|next|ago|week|weekend|month|"
                        r"year|since|monday|tuesday|wednesday|thursday|friday|saturday|sunday|"
                        r"january|february|march|april|may|june|july|august|september|october|"
                        r"november|december|\d{4}|morning|evening|summer|winter|spring|fall)\b", re.I)
_ENT = re.compile(r"\b([A-Z][a-zA-Z'-]{2,}|\d{2,})\b")
_NOT_ENT = set("The This That What When Where Who Why How Yes Yeah Wow Thanks Thank Hey Hi Hello "
               "And But Also Just Really Well Not Sure Glad Good Great Nice Awesome Oh Sounds "
               "It's I'm I've That's You're Can Could Would Will Have Has Did Does Are Was Were "
               "They Their There Here Haha Totally Definitely Absolutely Congrats".split())


def query_features(query: str) -> np.ndarray:
    words = query.split()
    z_temp = 1.0 if _TEMP.search(query) else 0.0
    z_rel = min(1.0, len(_REL.findall(query)) / 2.0)
    return np.array([1.0, z_temp, z_rel, min(1.0, len(words) / 25.0)])


def demand(query: str, conditioned: bool = True) -> np.ndarray:
    """delta_q: the task's demand for each role (sums to 1)."""
    if not conditioned:
        return np.full(len(ROLES), 1.0 / len(ROLES))
    ax = A @ query_features(query)
    return ax / ax.sum()


@lru_cache(maxsize=65536)
def has_time(text: str) -> float:
    return 1.0 if _UNIT_TEMP.search(text) else 0.0


@lru_cache(maxsize=65536)
def entities(text: str) -> frozenset[str]:
    """Capitalised words (not sentence openers such as "Thanks") and numbers of 2+ digits."""
    return frozenset(m for m in _ENT.findall(text) if m not in _NOT_ENT)


def unit_features(alpha: np.ndarray, texts: list[str], thread_of: list[str], pos: np.ndarray,
                  degree: dict[str, int], hop: dict[str, int], hops: int) -> np.ndarray:
    """f_q(v) for every candidate unit (n x 6), see the module docstring."""
    n = len(texts)
    span = float(alpha.max() - alpha.min()) if n else 0.0
    rel = (alpha - alpha.min()) / span if span > 0 else np.ones(n)
    ents = [entities(t) for t in texts]
    threads_of_ent: dict[str, set[str]] = {}
    for e, t in zip(ents, thread_of):
        for x in e:
            threads_of_ent.setdefault(x, set()).add(t)
    others = max(len(set(thread_of)) - 1, 1)
    ent = np.array([len(set().union(*(threads_of_ent[x] for x in ents[i])) - {thread_of[i]}) / others
                    if ents[i] else 0.0 for i in range(n)])
    temp = np.array([has_time(t) for t in texts])
    dmax = max([degree.get(t, 0) for t in thread_of] + [1])
    deg = np.array([degree.get(t, 0) / dmax for t in thread_of])
    hop_f = np.array([hop.get(t, 0) / max(hops, 1) for t in thread_of])
    return np.stack([rel, ent, temp, deg, pos, hop_f], axis=1)


def assign(delta: np.ndarray, feats: np.ndarray, conditioned: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """rho (n x |R|) and phi (n,) of eq. 5."""
    m = (np.diag(len(ROLES) * delta) @ M0) if conditioned else M0
    logits = feats @ m.T / T_R
    logits -= logits.max(axis=1, keepdims=True)
    rho = np.exp(logits)
    rho /= rho.sum(axis=1, keepdims=True)
    return rho, rho @ delta
