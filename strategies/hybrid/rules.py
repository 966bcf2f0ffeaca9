"""What to merge and what to supersede inside one cluster: deterministic rules, or an LLM's plan.

An operation is ``{"op": "merge" | "supersede", "ids": [rows retired], "into": survivor, "why"}``;
the operations of one cluster are disjoint and a survivor is never retired.

Rules (no model), thresholds on the memories' own cosine similarity:

* merge: rows at cosine >= ``DUP`` (tuples also need the same subject) are redundant or complementary
  (0.88 for tuples: on LoCoMo observations, pairs above it restate one fact or event), joined
  transitively; the newest (then longest) row survives and absorbs the others.
* supersede (tuples only): the same subject and relation, a relation that states something that
  can change (``STATE`` verbs: lives, works, likes, ...; an event verb such as "went" can be true
  many times over), cosine >= ``RELATED`` (the same topic), a different object and an earlier
  timestamp (by at least a day): the older row is superseded by the newest.
"""

from __future__ import annotations

import re
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from .llm_schema import MERGED_MAX_CHARS
from ...storage.rows import Memory

DUP, DUP_EPISODE, RELATED = 0.88, 0.90, 0.75
STATE = {"is", "was", "are", "lives", "live", "lived", "works", "work", "worked", "has", "have",
         "owns", "own", "likes", "like", "loves", "love", "prefers", "prefer", "wants", "want",
         "plans", "plan", "planning", "favorite", "favourite", "moved", "studies", "study", "drives",
         "uses", "dating", "married", "feels", "thinks", "believes", "hopes", "enjoys"}
_AUX = {"is", "was", "has", "had", "will", "would", "just", "also", "really", "still", "now",
        "currently", "recently", "finally", "been", "am", "are"}


def norm(s: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", (s or "").lower()))


def relation_key(rel: str) -> tuple[str, str]:
    """(normalised relation, head verb) — "is currently working at" -> head "working"."""
    words = norm(rel).split()
    head = next((w for w in words if w not in _AUX), words[-1] if words else "")
    return " ".join(words), head


def _components(n: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        parent[find(a)] = find(b)
    comps: dict[int, list[int]] = {}
    for i in range(n):
        comps.setdefault(find(i), []).append(i)
    return [c for c in comps.values() if len(c) > 1]


def _newest(rows: list[Memory], idx: list[int]) -> int:
    return max(idx, key=lambda i: (rows[i].timestamp, len(rows[i].text), rows[i].id))


def _seconds_apart(a: Memory, b: Memory) -> float:
    """From ``b``'s timestamp to ``a``'s (the rows ``rule_plan`` compares are dated)."""
    assert a.timestamp is not None and b.timestamp is not None
    return (a.timestamp - b.timestamp).total_seconds()


def rule_plan(kind: str, rows: list[Memory], vecs: np.ndarray) -> list[dict]:
    sims = vecs @ vecs.T
    subj = [norm(r.body.get("subject", "")) for r in rows]
    ops, retired = _merges(kind, rows, sims, subj)
    return ops if kind != "fact" else ops + _supersessions(rows, sims, subj, retired)


def _merges(kind: str, rows: list[Memory], sims: np.ndarray, subj: list[str]) -> tuple[list[dict], set[int]]:
    """Near-duplicates (facts: of the same subject) merged into the newest of each group."""
    dup = DUP if kind == "fact" else DUP_EPISODE
    pairs = [(a, b) for a in range(len(rows)) for b in range(a + 1, len(rows))
             if sims[a, b] >= dup and (kind != "fact" or subj[a] == subj[b])]
    ops, retired = [], set()
    for comp in _components(len(rows), pairs):
        keep = _newest(rows, comp)
        gone = [i for i in comp if i != keep]
        retired.update(gone)
        ops.append({"op": "merge", "ids": [rows[i].id for i in gone], "into": rows[keep].id,
                    "why": f"near-duplicates (cosine >= {dup})",
                    "similarity": round(float(min(sims[keep, i] for i in gone)), 4)})
    return ops, retired


def _supersessions(rows: list[Memory], sims: np.ndarray, subj: list[str], retired: set[int]) -> list[dict]:
    """Facts of one subject and state relation: the newest object supersedes a related older
    one (a day or more before) that says otherwise."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(rows):
        rel, head = relation_key(r.body.get("relation", ""))
        if i not in retired and head in STATE:
            groups.setdefault((subj[i], rel), []).append(i)
    ops = []
    for (s, rel), idx in groups.items():
        if len(idx) < 2:
            continue
        keep = _newest(rows, idx)
        obj = norm(rows[keep].body.get("object", ""))
        gone = [i for i in idx if i != keep and sims[keep, i] >= RELATED
                and norm(rows[i].body.get("object", "")) != obj
                and _seconds_apart(rows[keep], rows[i]) >= 86400]
        if gone:
            retired.update(gone)
            ops.append({"op": "supersede", "ids": [rows[i].id for i in gone],
                        "into": rows[keep].id,
                        "why": f"same subject and relation ({s!r} {rel!r}), newer object"})
    return ops


CONSOLIDATION_PROMPT = """You maintain an agent's long-term memory. The entries below were
clustered together because they are semantically similar. Propose operations:
- merge: entries that are redundant or complementary (the same fact or event said again) are
  merged into the most complete, most recent entry ("into"); list the others in "ids";
- supersede: entries that are outdated or contradicted by a newer entry ("into") are listed in
  "ids".
Only use ids shown below; leave entries alone when in doubt; say why in one sentence.
For a merge, also write "text": one entry that keeps every distinct detail, date and name of
the merged entries without repeating anything."""


class Operation(BaseModel):
    op: Literal["merge", "supersede"]
    ids: list[str]
    into: str
    why: str
    text: str = Field(default="", max_length=MERGED_MAX_CHARS,
                      description="merge only: the merged entry, keeping every distinct detail")


class ClusterPlan(BaseModel):
    operations: list[Operation]


def llm_plan(llm, kind: str, rows: list[Memory]) -> list[dict]:
    """The model's plan for one cluster, keeping only operations that name rows of it."""
    listing = "\n".join(f"[{r.id}] ({r.timestamp.date() if r.timestamp else '?'}) "
                        f"{r.text[:400]}" for r in rows)
    plan = llm.structured(CONSOLIDATION_PROMPT, f"{kind} entries:\n{listing}", ClusterPlan)
    known, used, ops = {r.id for r in rows}, set(), []
    for op in plan.operations:
        ids = [i for i in dict.fromkeys(op.ids) if i in known and i != op.into and i not in used]
        if op.into not in known or op.into in used or not ids:
            continue
        used.update(ids)
        used.add(op.into)
        ops.append({"op": op.op, "ids": ids, "into": op.into, "why": op.why.strip()[:300],
                    "by": "llm", **({"text": op.text.strip(), "text_by": llm.name}
                                    if op.op == "merge" and op.text.strip() else {})})
    return ops


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def merged_text(texts: list[str], limit: int = MERGED_MAX_CHARS) -> str:
    """The deterministic merge of a survivor's text (first) with the rows it absorbs, sentence by
    sentence (compared without case and punctuation): a sentence already said is skipped, one
    that says a kept sentence and more replaces it, any other is appended, while the whole
    stays within ``limit`` characters (the survivor's own text is always kept)."""
    out = [p.strip() for p in _SENTENCE.split(texts[0]) if norm(p)] or [texts[0].strip()]
    for t in texts[1:]:
        for part in (p.strip() for p in _SENTENCE.split(t)):
            key = norm(part)
            if not key or key in norm(" ".join(out)):
                continue
            grown = next((i for i, o in enumerate(out) if norm(o) in key), None)
            trial = out[:grown] + [part] + out[grown + 1:] if grown is not None else out + [part]
            if len(_join(trial)) <= limit:
                out = trial
    return _join(out) if len(out) > 1 else out[0]


def _join(parts: list[str]) -> str:
    return " ".join(p if p[-1] in ".!?;" else p + "." for p in parts)
