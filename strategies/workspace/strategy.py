"""``workspace``: TrawMem's task-oriented role-adaptive workspaces (paper 002), no LLM needed.

Memory units are the raw sources; ``curate`` cuts each session into local threads and links them
into the thread graph (``graph.py``); ``recall`` localises the task (seed threads, eq. 4
propagation under ``hops``), assigns roles (eq. 5), and greedily selects a complementary subset
under the objective J_q (eq. 6-9), then renders the chosen units verbatim with ``render.render``
(same ``<memory>`` frame and session-date grouping as ``plain``; within a session, source order,
which is within-thread order).

Beyond the paper (each switchable per call through the options; defaults in ``WorkspaceOptions``;
the LoCoMo figures that motivated them are in CHANGELOG.md, 2026-11-30):
- **Seeding** ``seeding="hybrid"`` (default): the thread index distance d_idx is the smaller of the
  head distance and the distance of the thread's best unit among the query's dense hits, and the
  threads holding the ``lex_seeds`` (60) best BM25+dense turns (RRF, as ``plain``) join the
  ``seeds`` (4) best threads by r0; the neighbourhood limit is ``max_threads`` (80 threads, ~480
  candidate units: large enough to hold every turn a 2,000-token context can show).
  ``seeding="dense"`` is the paper's head-only r0.
- **Affinity** ``affinity="rrf"`` (default): alpha(v) = (1-beta)(1+cos)/2 + beta * RRF(v)/max RRF
  with beta = 0.8 (RRF over the same BM25 + dense lists as ``plain``; 0 for a unit in neither).
  MiniLM cosine alone ranks names and rare words poorly. ``affinity="dense"`` is the paper's
  alpha; ``"hybrid"`` mixes in BM25 / max BM25 instead of RRF.
- **Context inheritance** (``ctx_eta`` = 1, ``ctx_margin`` = 0.3): within a thread a unit's
  affinity is max(alpha(v), ctx_eta * alpha(u) - ctx_margin) over its neighbours u (previous and
  next turn; ``ctx_next_only=1``: only the turn after a hit inherits, i.e. the reply). This
  is the paper's induced unit-level connectivity ("dashed arrows", fig. 3) made concrete: on LoCoMo
  most gold turns that relevance search misses sit right next to a turn it finds (the question
  matches the asking turn, the answer is the reply). The margin limits the inheritance to the
  neighbours of the strongest hits. ``ctx_eta=0`` switches it off.
- **Named speakers** (``roles.py``, ``recall._search``): every source is indexed and embedded
  as "speaker: text", so a speaker's name in the query ranks all of that speaker's turns (the
  shortest first, by BM25) above the turns about what is asked. With ``strip_names=1`` (default),
  when the query names speakers found among its dense hits, BM25 gets the query without those
  names and a third list, the dense hits of the name-free query (RRF weight ``content_dense``,
  1.0), joins the fusion; the name-ful dense list stays (it keeps the speaker preference). A
  unit said by a speaker the query names gets ``speaker_w`` (0.05) more affinity. LoCoMo, 2,000
  tokens: R 0.841 -> 0.857 from the BM25 stripping, 0.860 with the speaker term, 0.879 with the
  name-free dense list (multi-hop H 0.415 -> 0.465 -> 0.535); speaker_w 0.1 / 0.15 gave 0.857 /
  0.853 without the third list, 0.879 (H 0.825) with it; speaker_w 0 with it: 0.877. A
  fourth list ranks the named speakers' own turns by the name-free query (``speaker_dense``,
  1.0; ``search.search_turns``).
- **Fill** ``fill=1`` (default): after the paper's B_q units (or its coverage stop) the same greedy
  continues by marginal gain of the same J_q until the token budget binds. ``fill=0`` is the
  paper's strict B = 16 workspace (it leaves most of a 2,000-token budget unused).
- **Heads** ``heads=1`` puts the used threads' heads in one compact line inside the frame when it
  fits; off by default, because an extractive head repeats a unit's words and the budget is
  better spent on evidence. Heads are not copied into the recall trace (the recall log must not
  keep a forgotten turn's words when that turn was not itself cited); ``explain(thread_id)``
  shows a thread's head, units and edges.
- Sessions not curated yet have no threads: until the first thread exists the strategy answers
  with ``plain``; afterwards a still-queued session's turns are not candidates until curated.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from ..base import Env, RecallRequest, Recollection
from ..render import OPEN, render, render_line, session_header
from . import cache, graph, store
from ...storage.rows import Source
from ..registry import get

log = logging.getLogger(__name__)

ABLATIONS = ("fixed_seg", "no_cross", "seed_only", "no_roles", "identity_k", "no_multi")


@dataclass(frozen=True)
class WorkspaceOptions:
    """Per-call knobs (the module docstring, ``localise.py`` and ``recall.py`` say what each
    does); ``ablation=<name>`` is shorthand for ``<name>=1``, ``B`` for ``units``; ``seed_only``
    sets ``hops`` 0."""

    ALIASES: ClassVar[tuple[str, ...]] = ("ablation", "B")

    hops: int = 3
    units: int = 16
    fill: int = 1
    seeds: int = 4
    lex_seeds: int = 60
    max_threads: int = 80
    seeding: str = "hybrid"
    gamma: float = 0.6
    tau: float = 0.1
    lam_m: float = 1.25
    lam_r: float = 0.5
    fixed_seg: int = 0
    no_cross: int = 0
    seed_only: int = 0
    no_roles: int = 0
    identity_k: int = 0
    no_multi: int = 0
    heads: int = 0
    affinity: str = "rrf"
    beta: float = 0.8
    search_n: int = 100
    ctx_eta: float = 1.0
    ctx_next_only: int = 0
    ctx_margin: float = 0.3
    speaker_w: float = 0.05
    strip_names: int = 1
    content_dense: float = 1.0
    speaker_dense: float = 1.0

    @classmethod
    def resolve(cls, kw: dict[str, Any], raw: Mapping[str, Any]) -> dict[str, Any]:
        if raw.get("ablation") in ABLATIONS:
            kw[str(raw["ablation"])] = 1
        if "B" in raw:
            kw["units"] = int(raw["B"])
        if kw.get("seed_only"):
            kw["hops"] = 0
        return kw


class WorkspaceStrategy:
    name = "workspace"
    Options = WorkspaceOptions

    def has_memory(self, env: Env) -> bool:
        """Whether curation has built any thread in this namespace yet (``auto`` asks)."""
        return store.counts(env.space)[0] > 0

    # -- curation hooks ---------------------------------------------------------------------
    def curate(self, env: Env, session_id: str) -> None:
        snaps = cache.of(env.ns)
        with snaps.writing():
            out = graph.curate_session(env, session_id)
            cache.note_session(snaps, env.space, session_id, out.pop("rows"), out.pop("edge_rows"))
        log.debug("workspace curated %s: %s", session_id, out)

    def consolidate(self, env: Env, dry_run: bool = False, min_cluster_size: int = 10,
                    progress=None) -> dict:
        """Rebuild the thread graph from the stored threads (adjacency + symmetric k-NN)."""
        space = env.space
        store.declare(space)
        before = store.counts(space)[1]
        threads = store.threads(space)
        if progress:
            progress(0, 2, "rebuilding the workspace thread graph")
        edges = graph.rebuild_edges(threads)
        if not dry_run:
            store.replace_edges(space, graph.SCHEMES, edges)
            cache.of(env.ns).invalidate()
        if progress:
            progress(2, 2, "workspace thread graph rebuilt")
        return {"before": before, "after": len(edges), "clusters": 0,
                "operations": [{"op": "rebuild_thread_graph", "threads": len(threads),
                                "edges_before": before, "edges_after": len(edges),
                                "dry_run": dry_run}]}

    def forget(self, env: Env, source_ids: set[str]) -> int:
        """Delete every thread citing a forgotten source, and the edges touching it (the forget
        tool then re-queues the session, whose remaining turns are segmented again)."""
        space = env.space
        store.declare(space)
        gone = [r.id for r in store.threads(space, columns=["id", "source_ids"])
                if set(r.source_ids) & source_ids]
        if gone:
            store.delete_threads(space, gone)
            cache.of(env.ns).invalidate()
        return len(gone)

    def explain(self, env: Env, id: str) -> dict | None:
        store.declare(env.space)
        rows = store.threads(env.space, eq={"id": id}) if id.startswith("thr_") else []
        if not rows:
            return None
        t = rows[0]
        srcs = env.space.sources.get(list(t.source_ids))
        edges = store.edges_from(env.space, id)
        return {"summary": f"workspace thread ({t.scheme}) of session {t.session_id!r}: "
                           f"{len(srcs)} units; head: {t.head}",
                "sources": [{"id": s.id, "ref": s.ref, "text": s.text} for s in srcs],
                "edges": [{"to": e.dst, "weight": round(e.weight, 4), "type": e.etype}
                          for e in edges]}

    # -- recall ------------------------------------------------------------------------------
    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        from .recall import workspace_recall  # lazy: cycle with strategies.workspace.recall

        s = request.options.of(WorkspaceOptions)
        t0 = time.perf_counter()
        snap = cache.snapshot(cache.of(env.ns), env.space)
        scheme = "fixed" if s.fixed_seg else "topic"
        if not snap.ids.get(scheme):   # nothing curated yet: raw-turn search keeps recall working
            out = get("plain").recall(env, request)
            out.route_reason = "workspace: no threads curated yet, fell back to plain search"
            return out
        return workspace_recall(env, request, s, snap, scheme, t0)


def assemble(rows: list[Source], heads: list[str], limit: int,
             width: int) -> tuple[str, set[str]]:
    """The context: the chosen units, verbatim, grouped as ``render`` does (a long message's
    excerpt at most ``width`` characters); with ``heads``, a compact block of thread heads right
    after the frame's opening line, only if it fits."""
    context, verbatim = render(rows, width=width)
    if heads and rows:
        block = "[threads] " + " | ".join(heads) + "\n"
        if len(context) + len(block) <= limit:
            context = OPEN + block + context[len(OPEN):]
    return context, verbatim


def line_costs(rows: list[Source], width: int) -> tuple[list[int], list[int]]:
    return ([len(render_line(r, width)[0]) for r in rows],
            [len(session_header(r.timestamp, r.session_id)) for r in rows])

