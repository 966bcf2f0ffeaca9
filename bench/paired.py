"""Paired bootstrap of two LoCoMo / REALTALK runs over the same questions (``--per-question``).

    python -m trimem.bench.paired A.json B.json [--key auto@2000] [--metric R] [--n 10000]

B minus A, per question, for one strategy@budget. Two resamplings, both paired (a resample
takes the same questions from both runs):

* **within conversations**: each conversation's questions are drawn with replacement, as many
  as it has (the conversations stay as they are; question-level noise);
* **conversations too**: the conversations are drawn with replacement first, then each drawn
  conversation's questions (also the noise of which conversations were picked; with five
  conversations this interval is wide).

Prints the mean difference, each 95 % interval and the share of resamples in which B does not
beat A (a one-sided bootstrap p).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections import defaultdict


def paired(a: dict, b: dict, key: str, metric: str) -> dict[str, list[float]]:
    """Per conversation, B's metric minus A's, question by question (the runs must match)."""
    ra, rb = a["per_question"][key], b["per_question"][key]
    if len(ra) != len(rb) or any(x["conv"] != y["conv"] for x, y in zip(ra, rb)):
        raise SystemExit("the two runs did not ask the same questions in the same order")
    by: dict[str, list[float]] = defaultdict(list)
    for x, y in zip(ra, rb):
        by[x["conv"]].append(y[metric] - x[metric])
    return dict(by)


def bootstrap(by: dict[str, list[float]], n: int, convs_too: bool, seed: int = 7) -> list[float]:
    rnd = random.Random(seed)
    names = sorted(by)
    means = []
    for _ in range(n):
        picked = [rnd.choice(names) for _ in names] if convs_too else names
        total, count = 0.0, 0
        for c in picked:
            d = by[c]
            total += sum(rnd.choice(d) for _ in d)
            count += len(d)
        means.append(total / count)
    return sorted(means)


def summary(by: dict[str, list[float]], n: int) -> dict:
    diffs = [d for ds in by.values() for d in ds]
    out = {"questions": len(diffs), "conversations": len(by),
           "mean_diff": round(statistics.mean(diffs), 4),
           "per_conversation": {c: round(statistics.mean(d), 4) for c, d in sorted(by.items())}}
    for name, convs_too in (("within_conversations", False), ("conversations_too", True)):
        m = bootstrap(by, n, convs_too)
        out[name] = {"ci95": [round(m[int(0.025 * n)], 4), round(m[int(0.975 * n) - 1], 4)],
                     "p_not_better": round(sum(x <= 0 for x in m) / n, 4)}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--key", default="auto@2000")
    ap.add_argument("--metric", default="R", choices=("R", "H"))
    ap.add_argument("--n", type=int, default=10_000)
    args = ap.parse_args(argv)
    with open(args.a) as fa, open(args.b) as fb:
        a, b = json.load(fa), json.load(fb)
    print(json.dumps(summary(paired(a, b, args.key, args.metric), args.n), indent=2))


if __name__ == "__main__":
    main()
