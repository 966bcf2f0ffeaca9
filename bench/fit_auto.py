"""Fit ``auto``'s fusion on both dev sets and write ``strategies/auto/fitted.py``.

    python -m trimem.bench.fit_auto --data ../shared/data/locomo --data ../shared/data/realtalk \\
        --home STORES --model subset --loco

1. Stores: each conversation is read from ``STORES/<namespace>`` when that folder exists (one
   settled store per conversation, as ``bench/locomo.py --home`` leaves them), else from
   ``STORES`` itself; a conversation not stored yet is ingested there (curation included).
2. Harvest: for every question, each voter's ranking of source turns through ``auto``'s own
   ``vote`` (the same shared search, ``EXPAND`` x the budget), cached in
   ``STORES/harvest-<budget>-x<expand>.json``.
3. Fit, offline, with the ``fuse`` and ``pack_sources`` that ``auto`` runs. The objective is the
   mean over the data sets of R + H (evidence coverage as ``bench/locomo.py`` defines it), so the
   larger set does not outvote the other. Three models, from fewest free parameters up:

   * ``equal`` — every voter weight 1; only the RRF constant k is chosen (1 parameter);
   * ``subset`` — which voters vote, each with weight 1 or 0, and k (15 subsets x 3 k values;
     the model of the fit that ships: bench/README.md, "What is in-sample");
   * ``global`` — one weight per voter, plain's fixed at 1 (scale-free), and k (4 parameters);
   * ``kinds`` — ``global``, then per question kind a coordinate search from the global weights
     (kinds with fewer than --min-kind questions keep them): up to 4 x 5 parameters.

4. ``--loco`` fits leaving each conversation out (of both sets) and scores the held-out one;
   pooled per set, that is the estimate for unseen conversations. Without ``--dry-run`` the fit
   (and its in-sample and held-out scores) is written to ``fitted.py`` as the fit for
   ``--budget``, beside the fits for other budgets already there; ``auto`` uses the fit whose
   budget is nearest the caller's.
"""

from __future__ import annotations

import argparse
import itertools
import json
import pprint
import statistics
import sys
import textwrap
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from . import realtalk
from .locomo import dataset, ingest, load, norm_evidence, norm_ws, sessions, turn_text

if TYPE_CHECKING:
    from ..storage.rows import Source

VOTERS: tuple[str, ...] = ("plain", "hybrid", "workspace", "wiki")
GRID = (0.0, 0.5, 1.0, 2.0)
STEPS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
KS = (10.0, 30.0, 60.0)
MODELS = ("equal", "subset", "global", "kinds")
OUT = Path(__file__).resolve().parent.parent / "strategies" / "auto" / "fitted.py"


def harvest(home: Path, datas: list[str], convs: str, budget: int,
            expand: float) -> tuple[list[dict], dict]:
    """Per question: set, namespace, category, kind, gold source ids, each voter's ranked ids;
    and every namespace's source rows (id -> row), which the scorer packs."""
    from ..server.settings import Settings
    from ..strategies.auto.features import features
    from ..strategies.auto.strategy import ranked_sources
    from ..strategies.auto.vote import vote
    from ..strategies.base import RecallRequest
    from ..tools.runtime import Runtime

    cache = home / f"harvest-{budget}-x{expand:g}.json"
    runtimes: dict[Path, Runtime] = {}
    out = json.loads(cache.read_text()) if cache.exists() else []
    done = {q["ns"] for q in out}
    rows: dict[str, Source] = {}
    asked: set[str] = set()   # the cache may hold more conversations than this run asks for
    for data in datas:
        glob, cats = dataset(Path(data))
        name = "realtalk" if glob == realtalk.GLOB else "locomo"
        for ns, raw in load(Path(data), convs):
            where = (home / ns if (home / ns).is_dir() else home).resolve()   # one per store
            if where not in runtimes:
                runtimes[where] = Runtime(Settings(home=str(where)).to_config())
            rt = runtimes[where]
            asked.add(ns)
            space = rt.space(ns)
            if not space.sources.count():
                ingest(rt, ns, raw)
            rt.curation.wait_idle()
            rows |= {r.id: r for r in space.sources.all()}
            if ns in done:
                continue
            conv = raw.get("conversation", raw)
            env = rt.env(ns)
            texts = {t["dia_id"]: norm_ws(turn_text(t)) for _, _, ts in sessions(conv) for t in ts}
            by_ref = {r.ref: r.id for r in space.sources.all()}
            for qa in raw["qa"]:
                if qa.get("category") not in cats:
                    continue
                gold, _ = norm_evidence(qa.get("evidence", []), set(texts))
                if not gold:
                    continue
                req = RecallRequest(query=qa["question"], budget_tokens=budget)
                runs, failed, _, _ = vote(env, req, list(VOTERS), expand)
                assert not failed, f"{ns}: a voter failed: {failed}"
                out.append({"set": name, "ns": ns, "q": qa["question"],
                            "cat": cats[qa["category"]], "kind": features(qa["question"])["kind"],
                            "gold": [by_ref[g] for g in gold],
                            "ranks": {s: ranked_sources(o) for s, o in runs.items()}})
            tmp = cache.with_suffix(".tmp")   # whole or not at all: another run may read it
            tmp.write_text(json.dumps(out))
            tmp.replace(cache)
            print(f"  {ns}: harvested", file=sys.stderr)
    for rt in runtimes.values():
        rt.close()
    return [q for q in out if q["ns"] in asked], rows


class Scorer:
    """``fuse`` + ``pack_sources`` for one question under given weights, memoised: the
    leave-one-out folds revisit the same (question, weights, k) points."""

    def __init__(self, rows: dict[str, Source], budget: int):
        self.rows, self.budget = rows, budget
        self.memo: dict[tuple, tuple[float, float]] = {}

    def one(self, qi: int, q: dict, weights: dict[str, float], k: float) -> tuple[float, float]:
        from ..strategies.auto.fusion import fuse
        from ..strategies.render import pack_sources

        key = (qi, tuple(weights.get(s, 0.0) for s in VOTERS), k)
        if key not in self.memo:
            fused = fuse(q["ranks"], weights, k)
            packed = pack_sources([self.rows[i] for i, _, _ in fused], self.budget, by_rank=True)
            got = {r.id for r in packed.chosen} & packed.verbatim_ids
            hit = len(got & set(q["gold"]))
            self.memo[key] = (hit / len(q["gold"]), float(hit == len(set(q["gold"]))))
        return self.memo[key]

    def objective(self, qs: list[tuple[int, dict]], weights_of, k: float) -> float:
        """Mean over the data sets in ``qs`` of mean R + mean H; ``weights_of(q)`` -> weights."""
        per_set: dict[str, list[tuple[float, float]]] = {}
        for qi, q in qs:
            per_set.setdefault(q["set"], []).append(self.one(qi, q, weights_of(q), k))
        return statistics.mean(statistics.mean(r for r, _ in v) + statistics.mean(h for _, h in v)
                               for v in per_set.values())


def fit(sc: Scorer, qs: list[tuple[int, dict]], model: str, min_kind: int) -> dict:
    """{"k", "weights": {kind or "*": {voter: w}}} under ``model`` (see the module docstring)."""
    from ..strategies.auto.features import KINDS

    if model == "equal":
        combos = [(1.0,) * len(VOTERS)]
    elif model == "subset":   # plain may be left out too: it still votes for uncurated sessions
        combos = [c for c in itertools.product((0.0, 1.0), repeat=len(VOTERS)) if any(c)]
    else:
        combos = [(1.0, *ws) for ws in itertools.product(GRID, repeat=len(VOTERS) - 1)]
    best = max(((sc.objective(qs, const(dict(zip(VOTERS, c))), k), k, c)
                for k in KS for c in combos), key=lambda t: t[0])
    _, k, c = best
    w_glob = dict(zip(VOTERS, c))
    if model != "kinds":
        return {"k": k, "weights": {"*": w_glob}}
    weights = {"*": w_glob}
    for kind in KINDS:
        sub = [(i, q) for i, q in qs if q["kind"] == kind]
        if len(sub) < min_kind:
            continue
        w, cur, improved = dict(w_glob), sc.objective(sub, const(w_glob), k), True
        while improved:   # coordinate search: one voter's weight at a time
            improved = False
            for s, g in itertools.product(VOTERS, STEPS):
                trial = dict(w, **{s: g})
                if any(trial.values()) and (v := sc.objective(sub, const(trial), k)) > cur + 1e-9:
                    cur, w, improved = v, trial, True
        weights[kind] = w
    return {"k": k, "weights": weights}


def const(w: dict[str, float]):
    return lambda q: w


def weights_of(fitted: dict):
    return lambda q: fitted["weights"].get(q["kind"], fitted["weights"]["*"])


def scores(sc: Scorer, qs: list[tuple[int, dict]], per_q) -> dict:
    """Per data set: R, H and per category [R, H]; ``per_q(i, q)`` -> (R, H)."""
    out: dict[str, dict] = {}
    for name in sorted({q["set"] for _, q in qs}):
        rs = [(q["cat"], *per_q(i, q)) for i, q in qs if q["set"] == name]
        out[name] = {"R": round(statistics.mean(r for _, r, _ in rs), 4),
                     "H": round(statistics.mean(h for _, _, h in rs), 4), "n": len(rs),
                     **{c: [round(statistics.mean(r for cc, r, _ in rs if cc == c), 4),
                            round(statistics.mean(h for cc, _, h in rs if cc == c), 4)]
                        for c in sorted({c for c, _, _ in rs})}}
    return out


def report(sc: Scorer, qs: list[tuple[int, dict]], fitted: dict) -> dict:
    w = weights_of(fitted)
    dev = {"auto": scores(sc, qs, lambda i, q: sc.one(i, q, w(q), fitted["k"]))}
    for s in VOTERS:   # each voter alone, packed the same way
        dev[s] = scores(sc, qs, lambda i, q, s=s: sc.one(i, q, {s: 1.0}, fitted["k"]))
    return dev


def loco(sc: Scorer, qs: list[tuple[int, dict]], model: str, min_kind: int) -> dict:
    """Leave one conversation out: fit on the other nine, score auto on the held-out one."""
    held: dict[int, tuple[float, float]] = {}
    for ns in sorted({q["ns"] for _, q in qs}):
        f = fit(sc, [(i, q) for i, q in qs if q["ns"] != ns], model, min_kind)
        w = weights_of(f)
        for i, q in qs:
            if q["ns"] == ns:
                held[i] = sc.one(i, q, w(q), f["k"])
        print(f"  held out {ns}: k={f['k']} {f['weights']['*']}", file=sys.stderr)
    return scores(sc, qs, lambda i, q: held[i])


def write(fitted: dict, model: str, dev: dict, budget: int, expand: float, n: int) -> None:
    a = " / ".join(f"{s} R {v['R']:.3f} H {v['H']:.3f}" for s, v in dev["auto"].items())
    summary = (f"fitted {datetime.now():%Y-%m-%d} ({model}) on {n} dev questions of "
               f"{', '.join(dev['auto'])} at {budget} tokens: {a} (in-sample)")
    if "auto_held_out" in dev:
        ho = " / ".join(f"{s} R {v['R']:.3f} H {v['H']:.3f}" for s, v in dev["auto_held_out"].items())
        summary += f"; each conversation held out: {ho}"
    fit = {"k": fitted["k"], "model": model, "weights": fitted["weights"], "summary": summary,
           "dev": dev}
    from ..strategies.auto import fitted as current   # the other budgets' fits are kept

    if current.EXPAND != expand:
        current.FITS.clear()   # fits harvested at another depth do not belong beside this one
    fits = dict(sorted((current.FITS | {budget: fit}).items()))
    summaries = "\n\n".join(textwrap.fill(f"At {b} tokens: {f['summary']}", 96)
                             for b, f in fits.items())
    OUT.write_text(
        '"""Fusion parameters for ``auto``, written by ``python -m trimem.bench.fit_auto``\n'
        "(do not edit by hand): one fit per budget fitted; a recall uses the fit whose budget is\n"
        "nearest its own on a log scale. ``weights`` maps a question kind to voter weights; ``*``\n"
        "is every kind without its own.\n\n"
        + summaries + '\n"""\n\n'
        f"EXPAND = {expand!r}   # each strategy ranks for EXPAND x the caller's budget\n"
        f"FITS = {pprint.pformat(fits, width=100, sort_dicts=False)}\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True, help="a dev set folder, repeatable")
    ap.add_argument("--home", required=True, help="stores (see 1. above); the harvest is kept here")
    ap.add_argument("--convs", default="", help="e.g. 26,30,1,3 (default: every one in --data)")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--expand", type=float, default=2.0)
    ap.add_argument("--model", choices=MODELS, default="subset")
    ap.add_argument("--min-kind", type=int, default=30,
                    help="kinds with fewer dev questions keep the global weights")
    ap.add_argument("--dry-run", action="store_true", help="print, do not write fitted.py")
    ap.add_argument("--loco", action="store_true",
                    help="also fit leaving each conversation out and score it held out")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    qs, rows = harvest(Path(args.home), args.data, args.convs, args.budget, args.expand)
    sc = Scorer(rows, args.budget)
    iq = list(enumerate(qs))
    fitted = fit(sc, iq, args.model, args.min_kind)
    dev = report(sc, iq, fitted)
    if args.loco:
        dev["auto_held_out"] = loco(sc, iq, args.model, args.min_kind)
    print(json.dumps({"model": args.model, "k": fitted["k"], "weights": fitted["weights"],
                      "dev": dev}, indent=1))
    if not args.dry_run:
        write(fitted, args.model, dev, args.budget, args.expand, len(qs))
        print(f"wrote {OUT.name} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
