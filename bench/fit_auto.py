"""Fit ``auto``'s fusion weights on the dev conversations and write ``strategies/auto/fitted.py``.

    python -m trimem.bench.fit_auto --data ../shared/data/locomo --home /tmp/trimem-fit

1. Ingest every conversation (``bench/locomo.py``'s ``ingest``, curation included) into --home,
   or reuse what is already there.
2. Harvest: for every question, each voting strategy's ranking of source turns at EXPAND x the
   budget, through the strategies' own ``recall`` (cached in --home/harvest-<budget>.json).
3. Fit, offline, with the same ``fuse`` and ``pack_sources`` that ``auto`` runs: a grid over the
   RRF constant and the global weights, then per question kind a coordinate search from the
   global weights (kinds with fewer than --min-kind questions keep the global ones). The
   objective is R + H of LoCoMo evidence coverage (``bench/locomo.py``'s definition).
4. Write the fitted values (and the dev scores they reach) to ``strategies/auto/fitted.py``.

Only the five dev conversations are used; there is no held-out split here, so the figures this
prints are fitted figures (``bench/README.md`` says so next to them).
"""

from __future__ import annotations

import argparse
import itertools
import json
import pprint
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path

from .locomo import CATS, ingest, load, norm_evidence, norm_ws, sessions, turn_text

VOTERS = ("plain", "hybrid", "workspace", "wiki")
GRID = (0.0, 0.5, 1.0, 2.0)
KS = (10.0, 30.0, 60.0)
OUT = Path(__file__).resolve().parent.parent / "strategies" / "auto" / "fitted.py"


def harvest(rt, data: str, convs: str, budget: int, expand: float, cache: Path) -> list[dict]:
    """Per question: gold source ids, kind, category, and each strategy's ranked source ids."""
    if cache.exists():
        return json.loads(cache.read_text())
    from ..strategies.auto.features import features
    from ..strategies.auto.strategy import ranked_sources
    from ..strategies.base import RecallRequest
    from ..strategies.registry import get

    out = []
    for ns, raw in load(Path(data), convs):
        conv = raw.get("conversation", raw)
        space = rt.space(ns)
        if not space.count_sources():
            ingest(rt, ns, raw)
        rt.curation.wait_idle()
        env = rt.env(ns)
        texts = {t["dia_id"]: norm_ws(turn_text(t)) for _, _, ts in sessions(conv) for t in ts}
        by_ref = {r["ref"]: r["id"] for r in space.all_sources()}
        req = RecallRequest(query="", budget_tokens=int(budget * expand))
        for qa in raw["qa"]:
            if qa.get("category") not in CATS:
                continue
            gold, _ = norm_evidence(qa.get("evidence", []), set(texts))
            if not gold:
                continue
            req.query = qa["question"]
            ranks = {s: ranked_sources(get(s).recall(env, req)) for s in VOTERS}
            out.append({"ns": ns, "q": qa["question"], "cat": qa["category"],
                        "kind": features(qa["question"])["kind"],
                        "gold": [by_ref[g] for g in gold], "ranks": ranks})
        print(f"  {ns}: harvested", file=sys.stderr)
    cache.write_text(json.dumps(out))
    return out


class Scorer:
    """Runs ``fuse`` + ``pack_sources`` for a question under given weights; memoised rows."""

    def __init__(self, rt, questions: list[dict], budget: int):
        self.budget = budget
        self.rows: dict[str, dict] = {}
        for ns in {q["ns"] for q in questions}:
            for r in rt.space(ns).all_sources():
                self.rows[r["id"]] = r

    def one(self, q: dict, weights: dict[str, float], k: float) -> tuple[float, float]:
        from ..strategies.auto.fusion import fuse
        from ..strategies.render import pack_sources

        fused = fuse(q["ranks"], weights, k)
        packed = pack_sources([self.rows[i] for i, _, _ in fused], self.budget, by_rank=True)
        got = {r["id"] for r in packed.chosen} & packed.verbatim_ids
        hit = len(got & set(q["gold"]))
        return hit / len(q["gold"]), float(hit == len(set(q["gold"])))

    def mean(self, qs: list[dict], weights: dict[str, float], k: float) -> tuple[float, float]:
        rs = [self.one(q, weights, k) for q in qs]
        return statistics.mean(r for r, _ in rs), statistics.mean(h for _, h in rs)


def fit(sc: Scorer, qs: list[dict], min_kind: int) -> dict:
    def obj(subset, w, k):
        r, h = sc.mean(subset, w, k)
        return r + h

    best: tuple[float, dict | None, float | None] = (-1.0, None, None)
    for k in KS:   # global: every combination with plain's weight fixed at 1 (scale-free)
        for ws in itertools.product(GRID, repeat=len(VOTERS) - 1):
            w = dict(zip(VOTERS, (1.0, *ws)))
            v = obj(qs, w, k)
            if v > best[0]:
                best = (v, w, k)
    _, w_glob, k = best
    assert w_glob is not None and k is not None, "obj() is never below 0: some weights won"
    print(f"  global: k={k} {w_glob} R+H={best[0]:.4f}", file=sys.stderr)
    per_kind = {}
    from ..strategies.auto.features import KINDS

    for kind in KINDS:
        sub = [q for q in qs if q["kind"] == kind]
        w = dict(w_glob)
        if len(sub) >= min_kind:
            cur = obj(sub, w, k)
            improved = True
            while improved:   # coordinate search: one strategy's weight at a time
                improved = False
                for s, g in itertools.product(VOTERS, (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)):
                    trial = dict(w, **{s: g})
                    if not any(trial.values()):
                        continue
                    v = obj(sub, trial, k)
                    if v > cur + 1e-9:
                        cur, w, improved = v, trial, True
        per_kind[kind] = {"weights": w, "n": len(sub), "own_fit": len(sub) >= min_kind}
        print(f"  {kind} (n={len(sub)}): {w}", file=sys.stderr)
    return {"k": k, "global": w_glob, "kinds": per_kind}


def report(sc: Scorer, qs: list[dict], fitted: dict) -> dict:
    def auto_w(q):
        return fitted["kinds"][q["kind"]]["weights"]

    rows = {}
    for label in ("auto", *VOTERS):
        rs = []
        for q in qs:
            if label == "auto":
                r, h = sc.one(q, auto_w(q), fitted["k"])
            else:
                r, h = sc.one(q, {label: 1.0}, fitted["k"])
            rs.append((q["cat"], r, h))
        rows[label] = {"R": round(statistics.mean(r for _, r, _ in rs), 4),
                       "H": round(statistics.mean(h for _, _, h in rs), 4),
                       **{CATS[c]: [round(statistics.mean(r for cc, r, _ in rs if cc == c), 4),
                                    round(statistics.mean(h for cc, _, h in rs if cc == c), 4)]
                          for c in CATS}}
    return rows


def loco(sc: Scorer, qs: list[dict], min_kind: int) -> dict:
    """Leave one conversation out: fit on the other four, score ``auto`` on the held-out one;
    the held-out scores of all five, pooled, estimate how the fit does on unseen conversations."""
    held = []
    for ns in sorted({q["ns"] for q in qs}):
        train = [q for q in qs if q["ns"] != ns]
        test = [q for q in qs if q["ns"] == ns]
        f = fit(sc, train, min_kind)
        for q in test:
            r, h = sc.one(q, f["kinds"][q["kind"]]["weights"], f["k"])
            held.append((q["cat"], r, h))
        print(f"  held out {ns}: R {statistics.mean(r for _, r, _ in held[-len(test):]):.3f}",
              file=sys.stderr)
    return {"R": round(statistics.mean(r for _, r, _ in held), 4),
            "H": round(statistics.mean(h for _, _, h in held), 4),
            **{CATS[c]: [round(statistics.mean(r for cc, r, _ in held if cc == c), 4),
                         round(statistics.mean(h for cc, _, h in held if cc == c), 4)]
               for c in CATS}}


def write(fitted: dict, dev: dict, budget: int, expand: float, n: int) -> None:
    """Add (or replace) this budget's fit in ``fitted.py``; fits for other budgets stay."""
    from ..strategies.auto import fitted as current

    fits = {int(b): v for b, v in getattr(current, "FITS", {}).items()}
    weights = {kind: v["weights"] for kind, v in fitted["kinds"].items()}
    a = dev["auto"]
    summary = (f"fitted {datetime.now():%Y-%m-%d} on {n} LoCoMo dev questions at {budget} tokens: "
               f"R {a['R']:.3f} / H {a['H']:.3f} (in-sample)")
    if "auto_held_out" in dev:
        ho = dev["auto_held_out"]
        summary += f", leaving each conversation out R {ho['R']:.3f} / H {ho['H']:.3f}"
    fits[budget] = {"k": fitted["k"], "weights": weights, "summary": summary, "dev": dev,
                    "questions_per_kind": {k: v["n"] for k, v in fitted["kinds"].items()}}
    OUT.write_text(
        '"""Fusion parameters for ``auto``, one fit per budget, written by\n'
        '``python -m trimem.bench.fit_auto --budget B`` (do not edit by hand). ``auto`` uses the fit\n'
        "whose budget is nearest (on a log scale) to the caller's.\n\n"
        + "\n".join(fits[b]["summary"] + "." for b in sorted(fits)) + '\n"""\n\n'
        f"EXPAND = {expand!r}   # each strategy ranks for EXPAND x the caller's budget\n"
        f"FITS = {pprint.pformat(dict(sorted(fits.items())), width=100, sort_dicts=False)}\n")


def main(argv: list[str] | None = None) -> None:
    from ..server.settings import Settings
    from ..tools.runtime import Runtime

    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data/locomo")
    ap.add_argument("--home", required=True, help="store folder; kept and reused between runs")
    ap.add_argument("--convs", default="")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--expand", type=float, default=2.0)
    ap.add_argument("--min-kind", type=int, default=30,
                    help="kinds with fewer dev questions keep the global weights")
    ap.add_argument("--dry-run", action="store_true", help="print, do not write fitted.py")
    ap.add_argument("--loco", action="store_true",
                    help="also fit leaving each conversation out and score it held out")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rt = Runtime(Settings(home=args.home).to_config())
    cache = Path(args.home) / f"harvest-{args.budget}-x{args.expand:g}.json"
    qs = harvest(rt, args.data, args.convs, args.budget, args.expand, cache)
    sc = Scorer(rt, qs, args.budget)
    fitted = fit(sc, qs, args.min_kind)
    dev = report(sc, qs, fitted)
    if args.loco:
        dev["auto_held_out"] = loco(sc, qs, args.min_kind)
    print(json.dumps(dev, indent=1))
    if not args.dry_run:
        write(fitted, dev, args.budget, args.expand, len(qs))
        print(f"wrote {OUT.name} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
