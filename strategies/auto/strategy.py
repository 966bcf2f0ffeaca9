"""``auto``: the default strategy — fuse the other strategies' rankings, weighted per query kind.

1. The query's kind (temporal / hypothetical / list / multi / single) comes from observable
   features (``features.py``); the fusion weights come from ``fitted.py`` (written by
   ``bench/fit_auto.py``, fitted on both dev sets with as few free weights as held up when each
   conversation was left out): a kind's own weights where the fit gave it some, else the fit's
   ``*`` weights. A strategy the fit gives weight 0 does not vote and is not run (the fit that
   ships chose which strategies vote: ``fitted.py``). The kind is also reported in
   ``route_reason``.
2. Every strategy whose memory exists in the namespace (``has_memory``: hybrid's episodes and
   facts, workspace's threads, wiki's trajectories; ``plain`` always) and whose weight for this
   kind is above zero ranks source turns for ``EXPAND`` x the budget.
3. The rankings are fused by weighted reciprocal rank fusion (``fusion.py``), deduplicated by
   source (a question naming some of the speakers weighs their own turns more: ``named.py``),
   and packed greedily into the caller's budget; session groups are ordered by their best
   turn, so the most useful evidence comes first. Where the wiki has claims, quoted turns whose
   fact changed later are marked, and for a query about that kind of state the turn with the
   latest value goes just before them (``wiki/revisions.py``; option ``current_first``, 1).

Sessions still waiting for curation (queued or failed) are in no curated store, so while any
exist ``plain`` votes with at least weight ``PLAIN_FRESH`` even where the fit gives it none, and
their turns also count the heaviest voter's weight at plain's rank (``_lift_fresh``): a turn remembered a
moment ago is searchable at once, on equal terms with curated ones.

With nothing curated yet (a new namespace, or curation still running) only ``plain`` has anything
to rank, and ``auto`` answers with it directly. ``route_reason`` says which strategies voted and
with what weights; the trace keeps every chosen turn's rank in each of them (``explain``).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from ..base import Env, Item, RecallRequest, Recollection
from ..render import Packed, pack_sources
from ..search import TurnSearch, source_ref
from ..wiki import revisions
from ..wiki.curate import slotted_claims
from . import fitted
from .features import features
from .dated import W_DATED, period_rankings, periods_named
from .fusion import fuse
from .named import UNNAMED_W, weigh_named
from .stretch import LIFT, WINDOW, lift_stretches
from .relevance import TOP, coverage, evidence, judge
from .vote import DEPTH, vote
from ...storage.rows import Source
from ..registry import get, names

VOTERS = ("plain", "hybrid", "workspace", "wiki")
PLAIN_FRESH = 1.0   # plain's least weight while sessions of the namespace await curation


@dataclass(frozen=True)
class AutoOptions:
    """Experiments' knobs (``bench/``): the query ``kind``, RRF ``k`` and a voter's weight
    ``w_<strategy>`` override the fit; ``expand``, ``share_depth``, ``w_dated``, ``unnamed_w``,
    ``stretch_lift`` and ``current_first`` are the module docstring's numbers."""

    kind: str | None = None
    k: float | None = None
    expand: float = fitted.EXPAND
    share_depth: int = DEPTH
    w_dated: float = W_DATED
    unnamed_w: float = UNNAMED_W
    stretch_lift: float = LIFT
    current_first: int = 1
    w_plain: float | None = None
    w_hybrid: float | None = None
    w_workspace: float | None = None
    w_wiki: float | None = None

    def weights(self) -> dict[str, float]:
        """The voters' weights the caller set."""
        w = {"plain": self.w_plain, "hybrid": self.w_hybrid, "workspace": self.w_workspace,
             "wiki": self.w_wiki}
        return {s: v for s, v in w.items() if v is not None}


@dataclass
class _Route:
    """What ``auto`` decided before anyone ranked: the query's kind, the fit, the weights, and
    which strategies vote."""

    opt: AutoOptions
    f: dict
    kind: str
    fit: dict
    weights: dict[str, float]
    k: float
    ready: list[str]
    waiting: set[str]
    voters: list[str]


@dataclass
class _Fused:
    """The fused ranking: per turn its score and each voter's rank, in rank order, with what
    changed it (named speakers, named periods, stretches, facts that changed later)."""

    rows: list[Source]
    info: dict[str, tuple[float, dict]]
    named: set[str]
    unnamed_w: float
    dated: dict
    raised: dict[str, float]
    changed: dict


class AutoStrategy:
    name = "auto"
    Options = AutoOptions

    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        route = _route(env, request)
        if route.voters == ["plain"]:
            return _plain_only(env, request, route)
        runs, failed, ms, turns = vote(env, request, route.voters, route.opt.expand,
                                       route.opt.share_depth)
        if not runs:   # every voter failed: the plain path reports its own error, if any
            return get("plain").recall(env, request)
        route.voters = list(runs)
        rankings = {s: ranked_sources(out) for s, out in runs.items()}
        fused = _fused(env, request, route, rankings, turns)
        packed = pack_sources(fused.rows, request.budget_tokens, by_rank=True,
                              marks=revisions.marks(fused.changed), focus=request.query)
        info = fused.info
        items = [Item(id=r.id, kind="source", text=r.text, role="evidence",
                      score=round(info[r.id][0], 6), timestamp=r.timestamp,
                      source_ids=[r.id]) for r in packed.chosen]
        sources = [source_ref(r, packed.width) for r in packed.chosen if r.id in packed.verbatim_ids]
        trace = _trace(request, route, fused, packed) | {
            "strategies": {s: {"route_reason": out.route_reason, "ranked": len(rankings[s]),
                               "abstain": out.abstain, "ms": ms[s]} for s, out in runs.items()},
            "shared": dict(turns.hits), "failed": failed}
        trace = {key: trace[key] for key in TRACE_ORDER}
        out = Recollection(context=packed.context, items=items, sources=sources,
                           abstain=not packed.chosen, route_reason=_reason(route, fused, failed),
                           trace=trace)
        return _judged(env, out, *evidence(turns), request.query)


TRACE_ORDER = ("method", "route", "strategies", "shared", "failed", "chosen", "left_out",
               "changed_later", "budget")


def _route(env: Env, request: RecallRequest) -> _Route:
    """The kind, the fitted weights (an experiment's overrides on top), and the voters: the
    strategies with memory in this namespace and a weight above 0; plain votes too while
    sessions await curation (the module docstring)."""
    opt = request.options.of(AutoOptions)
    f = features(request.query)
    kind = opt.kind if opt.kind is not None else str(f["kind"])
    fit = fitted_for(request.budget_tokens)
    weights = dict(fit["weights"].get(kind) or fit["weights"]["*"]) | opt.weights()
    k = opt.k if opt.k is not None else float(fit["k"])
    ready = _ready(env, [s for s in VOTERS if s in names()])
    waiting = set(env.space.sessions.uncurated()) if ready != ["plain"] else set()
    if waiting and weights.get("plain", 0.0) < PLAIN_FRESH:
        # sessions still waiting for curation are in no curated store: only plain sees
        # their turns, so it votes (README: raw messages are searchable at once)
        weights["plain"] = PLAIN_FRESH
    voters = [s for s in ready if weights.get(s, 0.0) > 0] or ["plain"]
    return _Route(opt, f, kind, fit, weights, k, ready, waiting, voters)


def _plain_only(env: Env, request: RecallRequest, route: _Route) -> Recollection:
    """Nothing curated yet, or the fit gives this kind of question to plain alone."""
    out = get("plain").recall(env, request)
    why = ("no curated memory in this namespace yet (curation has not run or is still "
           "running), so raw-turn search answers" if route.ready == ["plain"] else
           f"for {route.kind} questions the fitted weights give the other strategies no vote")
    out.route_reason = f"auto → plain: {why}"
    out.trace["route"] = {"kind": route.kind, "features": _show(route.f), "voters": ["plain"],
                          "ready": route.ready}
    return _judged(env, out, *evidence(TurnSearch(env, request, TOP)), request.query)


def _fused(env: Env, request: RecallRequest, route: _Route, rankings: dict[str, list[str]],
           turns: TurnSearch) -> _Fused:
    """The voters' rankings (and the named periods' turns) fused, then weighed: fresh turns
    lifted, other speakers' turns damped, stretches raised, current values first."""
    opt, voters = route.opt, route.voters
    w_dated = opt.w_dated
    periods = periods_named(request.query, env.space.sessions.latest_time) if w_dated else []
    dated = period_rankings(env, request, periods, turns.qv) if periods else {}
    weights = {s: route.weights[s] for s in voters}
    fused = fuse(rankings | dated, weights | {p: w_dated for p in dated}, route.k)
    if route.waiting and "plain" in rankings:
        fused = _lift_fresh(fused, rankings["plain"], turns, route.waiting, weights, route.k)
    by_id = {r.id: r for r in turns.rows([i for i, _, _ in fused])}   # read once
    fused, named, unnamed_w = weigh_named(env, request.query, fused, by_id, opt.unnamed_w)
    fused, raised = lift_stretches(fused, by_id, opt.stretch_lift)
    info = {sid: (score, ranks) for sid, score, ranks in fused}
    ids = [sid for sid, _, _ in fused]
    changed = (revisions.changes(env.space, ids[:DEPTH], slotted_claims(env.ns, env.space))
               if "wiki" in route.ready and opt.current_first else {})
    ranked = revisions.current_first(ids, changed, request.query)
    added = set(ranked) - info.keys()
    for i in added:   # a current value no voter ranked: listed unscored
        info[i] = (0.0, {})
    rows = [r for r in turns.rows(ranked)
            if r.id not in added or request.in_window(r.timestamp)]
    return _Fused(rows, info, named, unnamed_w, dated, raised, changed)


def _trace(request: RecallRequest, route: _Route, fused: _Fused, packed: Packed) -> dict:
    """The trace's parts that ``explain`` shows of the fusion (the voters' parts are added by
    the caller)."""
    voters, info = route.voters, fused.info
    return {
        "method": f"weighted reciprocal rank fusion (k={route.k:g}) of {', '.join(voters)}, each "
                  f"ranking for {route.opt.expand:g}x the budget; greedy fill; sessions by best turn",
        "route": {"kind": route.kind, "features": _show(route.f),
                  "weights": {s: route.weights[s] for s in voters},
                  "ready": route.ready, "uncurated_sessions": len(route.waiting),
                  "fit": route.fit["summary"], "named_speakers": sorted(fused.named),
                  "unnamed_w": fused.unnamed_w,
                  "periods": {p: route.opt.w_dated for p in fused.dated},
                  "stretch": {"lift": route.opt.stretch_lift, "window": WINDOW}},
        "chosen": [{"id": r.id, "score": round(info[r.id][0], 6), "ranks": info[r.id][1],
                    "stretch": round(fused.raised.get(r.id, 0.0), 6),
                    "why": "highest fused score that fit"} for r in packed.chosen],
        "left_out": [{"id": r.id, "score": round(info[r.id][0], 6), "why": why}
                     for r, why in packed.left_out[:50]],
        "changed_later": revisions.listed(fused.changed, packed.chosen),
        "budget": {"tokens": request.budget_tokens, "chars_allowed": packed.chars_budget,
                   "chars_used": packed.chars_used},
    }


def _reason(route: _Route, fused: _Fused, failed: dict) -> str:
    """The route reason: who voted with what weight, and why."""
    kind, voters, weights = route.kind, route.voters, route.weights
    w_txt = ", ".join(f"{s} {weights[s]:g}" for s in voters)
    why = (f"because the question reads as {kind}" if kind in route.fit["weights"] else
           f"the same for every kind of question; this one reads as {kind}")
    reason = f"auto → fusion of {', '.join(voters)} (weights {w_txt}) {why}" + _cues(route.f)
    if fused.named and fused.unnamed_w != 1.0:
        # JSON-quoted: a speaker label is stored text, and explain's summary shows this line
        who = ", ".join(json.dumps(n, ensure_ascii=False) for n in sorted(fused.named))
        reason += f"; the question names {who}: turns of other speakers keep " \
                  f"{fused.unnamed_w:g} of their score"
    if fused.dated:
        reason += (f"; the question names {', '.join(p.replace(':', ' ') for p in fused.dated)}: "
                   f"the turns of that time vote too (weight {route.opt.w_dated:g})")
    if route.waiting:
        reason += (f"; {len(route.waiting)} session(s) await curation, so plain votes with weight "
                   f"{weights['plain']:g} to reach their raw turns")
    if failed:
        reason += f"; left out after an error: {', '.join(failed)}"
    return reason


def _judged(env: Env, out: Recollection, best_cosine: float | None, texts: list[str],
            query: str) -> Recollection:
    """Abstain also when the best evidence is off the query (``relevance.py``); the context
    stays as it is."""
    verdict = judge(env.ns, env.space, best_cosine, coverage(query, texts),
                    env.embed_queries if env.asymmetric else None)
    out.trace["relevance"] = verdict
    if verdict["abstain"] and out.items:
        out.route_reason += f"; abstains: {verdict['why']}"
    out.abstain = out.abstain or verdict["abstain"]
    return out


def _lift_fresh(fused, plain_rank: list[str], turns: TurnSearch, waiting: set[str],
                weights: dict, k: float):
    """Turns of sessions awaiting curation are seen by plain alone: the other voters cannot rank
    them, which fusion would read as votes against. Such a turn also gets the heaviest other
    voter's weight at plain's rank, as if that one voter agreed with plain (counting all of them
    would put fresh turns above curated turns the voters agree on). Curated turns keep theirs."""
    sess = {r.id: r.session_id for r in turns.rows(plain_rank)}
    pos = {i: n for n, i in enumerate(plain_rank, start=1)}
    extra = max((w for s, w in weights.items() if s != "plain"), default=0.0)
    out = []
    for sid, score, ranks in fused:
        if sess.get(sid) in waiting and sid in pos:
            score += extra / (k + pos[sid])
        out.append((sid, score, ranks))
    return sorted(out, key=lambda x: -x[1])


def fitted_for(budget: int) -> dict:
    """The fit whose budget is nearest the caller's on a log scale (1,500 tokens is as far from
    1,000 as from 2,250): coverage grows with the logarithm of the budget, not linearly."""
    return fitted.FITS[min(fitted.FITS, key=lambda b: abs(math.log(b / max(budget, 1))))]


def ranked_sources(out: Recollection) -> list[str]:
    """A strategy's source turns, best first: its quoted items in the order it accepted them
    (``source`` items of plain / hybrid / wiki, ``unit`` items of workspace; notes, pages and
    episodes are not source turns)."""
    return [i.id for i in out.items if i.kind in ("source", "unit")]


def _ready(env: Env, available: list[str]) -> list[str]:
    """The strategies with memory in this namespace (``plain`` always). A strategy's memory,
    once built, stays (curation only adds; forgetting every source leaves a voter that ranks
    nothing, which fusion ignores), so a yes is remembered per namespace handle and only a no
    is asked again on the next recall: no row counts on the hot path once curation has run
    (the yeses are kept in the namespace's context, ``env.ns.ready``)."""
    known = env.ns.ready
    for s in available:
        if s == "plain" or s in known:
            continue
        hook = getattr(get(s), "has_memory", None)
        if callable(hook) and hook(env):
            known.add(s)
    return [s for s in available if s == "plain" or s in known]


def _show(f: dict) -> dict:
    return {k: f[k] for k in ("temporal", "hypothetical", "list", "multi", "names", "words")}


def _cues(f: dict) -> str:
    cues = [k for k in ("temporal", "hypothetical", "list", "multi") if f[k]]
    return f" (cues: {', '.join(cues)})" if cues else ""
