"""Hybrid retrieval (paper §3.3): top-k episodes and top-2k tuples, then packing into the budget.

Two independent semantic searches over the active memories, as in the paper: episodes (their
vector is of their ``details``) top-``k`` and tuples (their natural-language string) top-``2k``,
k = 10. Choices the paper leaves open (it hands everything to an answering model; here the
contract is a budgeted context whose quoted sources must be verbatim):

* Each search is fused with BM25 over the same texts by reciprocal rank fusion (option
  ``fts=0`` turns it off; bench/README.md, "Tried and not kept", shows what it adds).
* The raw evidence is chosen by one weighted RRF over the rankings of source turns: the turn
  search every strategy shares (``search.search_turns``: BM25 and dense, and for a question that
  names speakers its name-free form and the named speakers' own turns, as ``plain`` searches;
  option ``names=0`` searches the query as asked), the turns cited by the ranked tuples, and the
  turns of the ranked episodes (round-robin, each episode's turns by cosine to the query,
  ``per_episode`` of them). Weights: options ``w_bm25``, ``w_dense``, ``w_fact``, ``w_episode``
  (the name-free and named-speaker lists weigh 1, as in ``plain``).
* A share ``notes`` of the budget (default 0.05) goes to one line per top tuple (with its resolved
  date and the ref of its source turn) and episode (title and summary); the rest to the cited turns
  through ``render.pack_sources``, so each tuple's source quote stands verbatim beside it. The top
  note is shown even past that share when it takes at most ``NOTE_CAP`` (0.15) of the budget, so a
  small budget still carries one. On both dev sets a smaller share quotes more evidence
  (shares 0.15 / 0.10 / 0.05: LoCoMo R 0.864 / 0.869 / 0.878 at 2,000 tokens, REALTALK 0.756 /
  0.759 / 0.767; every conversation held out picks 0.05; bench/README.md, "The paper strategies
  against plain"). A note line repeats what a quoted turn says, dated and
  condensed, for the model that reads the context; evidence coverage does not count it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...storage.rows import Memory
from ..base import Env, ItemKind, RecallRequest
from ..frame import CLOSE, OPEN, one_line, shown
from ..search import ranked_lists, rrf, search_turns, turn_search

NOTE_CAP = 0.15   # the top note may take up to this share of the budget (see the docstring)

@dataclass(frozen=True)
class HybridOptions:
    """See the module docstring; ``candidates``: the turn search's depth, ``max_notes``: at
    most this many note lines, ``names`` (1/0): search a question that names speakers as
    ``plain`` does."""

    k: int = 10
    fts: int = 1
    notes: float = 0.05
    per_episode: int = 3
    candidates: int = 100
    w_bm25: float = 1.0
    w_dense: float = 1.0
    w_fact: float = 1.0
    w_episode: float = 0.5
    max_notes: int = 12
    names: int = 1

    def weight(self, ranking: str) -> float:
        return {"bm25": self.w_bm25, "dense": self.w_dense, "fact": self.w_fact,
                "episode": self.w_episode}.get(ranking, 1.0)


def search_memories(env: Env, request: RecallRequest, qv, kind: str, n: int, fts: bool):
    """Ranked active memories of ``kind`` (dense top-n, fused with BM25 top-n) with score parts."""
    space = env.space
    if space.memories.table() is None:
        return [], {}
    dense = space.memories.vector_search(kind, qv, n)
    lists = {"dense": [i for i, _ in dense]}
    lexical = []
    if fts and request.query.strip():
        try:
            lexical = space.memories.fts_search(kind, request.query, n)
        except Exception:  # a missing/partial FTS index must not fail a recall
            lexical = []
        lists["bm25"] = [i for i, _ in lexical]
    parts = rrf(lists)
    for i, s in dense:
        parts[i]["cosine"] = round(s, 4)
    for i, s in lexical:
        parts[i]["bm25"] = round(s, 4)
    order = list(parts)
    # a survivor of a merge still quotes the turns of the rows it absorbed
    rows = [r.with_source_ids(list(dict.fromkeys(list(r.source_ids or []) + [
                s for a in r.lineage.get("absorbed", []) for s in a["source_ids"]])))
            for r in space.memories.get(order) if request.in_window(r.timestamp)]
    return rows[:n], parts


def episode_turns(env: Env, episodes: list[Memory], qv, per_episode: int) -> list[str]:
    """Round-robin over the ranked episodes of their turns, each episode's by cosine to the query."""
    want = [s for e in episodes for s in e.source_ids or []]
    vecs = env.space.sources.vectors(want)
    ranked = []
    for e in episodes:
        ids = [s for s in e.source_ids or [] if s in vecs]
        ranked.append(sorted(ids, key=lambda s: -float(vecs[s] @ qv))[:per_episode])
    out = []
    for j in range(per_episode):
        out += [ids[j] for ids in ranked if j < len(ids)]
    return out


def date_label(row: Memory) -> str:
    ts = row.timestamp
    return f"{ts.day} {ts.strftime('%B %Y')}" if ts is not None else "undated"


def fact_line(row: Memory) -> str:
    refs = ", ".join(one_line(r) for r in row.refs or [])
    return f"- ({date_label(row)}) {shown(row.text)[0]}" + (f" [{refs}]" if refs else "") + "\n"


def episode_line(row: Memory) -> str:
    """Stored strings through ``frame``: the title on one line, the summary indented."""
    b = row.body
    title = one_line(b.get("title") or "")
    summary = shown(b.get("summary") or row.text[:300])[0]
    return f"- ({date_label(row)}) {title}: {summary}\n"


def notes_block(episodes: list[Memory], facts: list[Memory], limit_chars: int,
                max_notes: int, first_chars: int = 0
                ) -> tuple[str, list[tuple[ItemKind, Memory]], list[tuple[str, str]]]:
    """The note lines that fit ``limit_chars``: facts and episodes alternately by rank (facts
    first: they are shorter and carry resolved dates); the first one may take up to
    ``first_chars`` instead. Returns (text, kept, dropped)."""
    queue: list[tuple[ItemKind, Memory]] = []
    fi = ei = 0
    while fi < len(facts) or ei < len(episodes):
        for _ in range(2):
            if fi < len(facts):
                queue.append(("fact", facts[fi]))
                fi += 1
        if ei < len(episodes):
            queue.append(("episode", episodes[ei]))
            ei += 1
    lines: list[str] = []
    kept: list[tuple[ItemKind, Memory]] = []
    dropped: list[tuple[str, str]] = []
    used = 0
    header = "[notes: episodes and facts distilled from the quoted turns]\n"
    for kind, row in queue:
        line = fact_line(row) if kind == "fact" else episode_line(row)
        cost = len(line) + (0 if lines else len(header))
        if len(kept) >= max_notes:
            dropped.append((row.id, "note limit"))
        elif used + cost > (limit_chars if kept else max(limit_chars, first_chars)):
            dropped.append((row.id, "over the notes budget"))
        else:
            lines.append(line)
            kept.append((kind, row))
            used += cost
    return (header + "".join(lines) if lines else ""), kept, dropped


def with_notes(context: str, notes: str) -> str:
    if not notes:
        return context
    if not context:
        return OPEN + notes + CLOSE
    return context.replace(OPEN, OPEN + notes, 1)


def candidate_sources(env: Env, request: RecallRequest, o: HybridOptions,
                      episodes: list[Memory], facts: list[Memory], qv):
    n = o.candidates
    turns = turn_search(env, request, n, qv)
    order, parts = search_turns(env, request, n, names=bool(o.names), turns=turns)
    rankings = {name: ids for name, ids in ranked_lists(
        parts, ("bm25", "dense", "content", "speaker")).items() if ids}
    rankings["fact"] = [s for f in facts for s in f.source_ids or []]
    rankings["episode"] = episode_turns(env, episodes, qv, o.per_episode)
    weights = {n: o.weight(n) for n in rankings}
    fused = rrf(rankings, weights=weights)
    for i, p in parts.items():
        fused[i].update({k: round(v, 4) for k, v in p.items() if k in ("bm25", "cosine")})
    rows = [r for r in turns.rows(list(fused)) if request.in_window(r.timestamp)]
    return rows, fused
