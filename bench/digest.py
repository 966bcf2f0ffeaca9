"""What the ``SessionStart`` memory holds of what is asked later.

    python -m trimem.bench.digest --data ../shared/data/locomo --home CAPTURE_HOME [--tokens 400,800,1600]

``CAPTURE_HOME`` is a ``bench/capture.py --home`` folder after its run (the captured memory
under ``captured/``, one project folder per conversation under ``projects/``). For each
conversation the project's start context is built at each budget, as the drainer builds it
(``capture.digest.build``), and every benchmark question is scored against it: a gold evidence
turn counts as shown when its first ``SHOWN_CHARS`` characters (all of a shorter turn) stand
in the context. R is the mean share of gold turns shown, H the share of questions with all
shown; "recent" keeps the questions whose evidence all lies in the conversation's last
``RECENT`` sessions (what a user picking the work up again asks about first).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from .locomo import dataset, load, norm_evidence, norm_ws, sessions, turn_text

SHOWN_CHARS = 120
RECENT = 3


def _shown(text: str, ctx: str) -> bool:
    return norm_ws(text)[:SHOWN_CHARS] in ctx


def run(data: Path, home: Path, tokens: list[int], convs: str = "") -> dict:
    from ..capture.digest import build
    from ..capture.project import project_namespace
    from ..server.settings import Settings
    from ..tools.runtime import Runtime

    cats = dataset(data)[1]
    rt = Runtime(Settings(home=str(home / "captured"), curation=False).to_config())
    out: dict = {"tokens": tokens, "conversations": {}}
    rows: dict[int, list[dict]] = {t: [] for t in tokens}
    try:
        for name, raw in load(data, convs):
            conv = raw.get("conversation", raw)
            ns = project_namespace(str(home / "projects" / name))
            texts = {t["dia_id"]: turn_text(t) for _, _, ts in sessions(conv) for t in ts}
            last = [k for k, _, _ in sessions(conv)][-RECENT:]
            recent_ids = {t["dia_id"] for k, _, ts in sessions(conv) if k in last for t in ts}
            for budget in tokens:
                ctx = norm_ws(build(rt, ns, budget))
                out["conversations"].setdefault(name, {})[budget] = len(ctx)
                for qa in raw["qa"]:
                    if qa.get("category") not in cats:
                        continue
                    gold = norm_evidence(qa.get("evidence", []), set(texts))[0]
                    if not gold:
                        continue
                    got = [g for g in gold if _shown(texts[g], ctx)]
                    rows[budget].append({"R": len(got) / len(gold), "H": float(len(got) == len(gold)),
                                         "recent": set(gold) <= recent_ids})
    finally:
        rt.close()

    def agg(rs: list[dict]) -> dict:
        return {"R": round(statistics.mean(r["R"] for r in rs), 4) if rs else None,
                "H": round(statistics.mean(r["H"] for r in rs), 4) if rs else None, "n": len(rs)}

    out["results"] = {b: {"all": agg(rs), "recent": agg([r for r in rs if r["recent"]])}
                      for b, rs in rows.items()}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--home", required=True, help="a bench/capture.py --home folder")
    ap.add_argument("--tokens", default="400,800,1600")
    ap.add_argument("--convs", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    out = run(Path(args.data), Path(args.home), [int(t) for t in args.tokens.split(",")], args.convs)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    print(json.dumps({b: {k: (v["R"], v["H"], v["n"]) for k, v in r.items()}
                      for b, r in out["results"].items()}))


if __name__ == "__main__":
    main()
