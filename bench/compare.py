"""Two ``bench/locomo.py --json`` runs side by side: R / H per strategy and category, and how
many questions got a different context (both runs with ``--hash-contexts``).

    python -m trimem.bench.compare before.json after.json

Only the conversations both runs finished are compared question by question (a run stopped
early has written its figures up to its last finished conversation).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def compare(a: dict, b: dict) -> list[str]:
    lines = ["| strategy@budget | R before / after | H before / after | categories R/H before -> after "
             "| contexts differing |", "|---|---|---|---|---|"]
    ha, hb = a.get("context_sha1", {}), b.get("context_sha1", {})
    for key in a["results"]:
        if key not in b["results"]:
            continue
        ra, rb = a["results"][key], b["results"][key]
        cats = "; ".join(f"{c} {ra['by_category'][c]['R']:.3f}/{ra['by_category'][c]['H']:.3f} -> "
                         f"{rb['by_category'][c]['R']:.3f}/{rb['by_category'][c]['H']:.3f}"
                         for c in ra["by_category"] if c in rb["by_category"])
        diff = "-"
        if key in ha and key in hb:
            n = min(len(ha[key]), len(hb[key]))
            diff = f"{sum(x != y for x, y in zip(ha[key][:n], hb[key][:n]))} of {n}"
        lines.append(f"| {key} | {ra['R']:.3f} / {rb['R']:.3f} | {ra['H']:.3f} / {rb['H']:.3f} | "
                     f"{cats} | {diff} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    a, b = (json.loads(Path(p).read_text()) for p in argv[:2])
    if a.get("conversations") != b.get("conversations"):
        sys.stderr.write(f"conversations differ: {a.get('conversations')} / {b.get('conversations')}\n")
    sys.stdout.write("\n".join(compare(a, b)) + "\n")


if __name__ == "__main__":
    main()
