"""LoCoMo evidence coverage at a token budget, through the same code as the MCP tools.

    python -m trimem.bench.locomo --data ../shared/data/locomo --strategies plain,auto --budget 2000

The embedder is the one ``TRIMEM_EMBEDDER`` names (``local`` when unset); the report says which
ran (``embedder``).

Each conversation goes into its own namespace through ``tools.remember.remember`` (one call per
session, turn ``dia_id`` as ``ref``, the session's date as timestamp); every category 1-4 question
goes through ``tools.recall.recall``. A gold evidence turn counts as covered only when ``sources``
names it AND its text stands verbatim (whitespace-normalised, so the indentation that
strategies/frame.py puts after each line break counts as verbatim) in ``context``. Reported per
strategy,
overall and per category: R (mean share of gold turns covered), H (share of questions with every
gold turn covered) and A (answer-token recall: share of the gold answer's content words found in
the context). The scoring matches ../shared/tools/locomo_mcp.py, which measures through MCP.

The same code runs REALTALK (``--data ../shared/data/realtalk``, or ``python -m
trimem.bench.realtalk``): the folder's files say which data set it is, and
:mod:`trimem.bench.realtalk` holds what differs (file names, turn text key, timestamps, categories).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
STOP = set("a an the and or but of to in on at for with by from is are was were be been it its "
           "this that these those he she they them his her their i you we my your our as not no "
           "do did does has have had so if than then there what when where who which how".split())


def parse_when(s: str) -> str:
    """A LoCoMo ('1:56 pm on 8 May, 2023') or REALTALK ('29.12.2023, 22:42:04') time, as ISO."""
    from .realtalk import TIME_FORMAT

    for fmt in ("%I:%M %p on %d %B, %Y", TIME_FORMAT):
        try:
            return datetime.strptime(s.strip(), fmt).isoformat()
        except ValueError:
            pass
    raise ValueError(f"unknown time format: {s!r}")


def sessions(conv: dict):
    n = 1
    while f"session_{n}" in conv:
        if conv[f"session_{n}"]:
            yield n, conv[f"session_{n}_date_time"], conv[f"session_{n}"]
        n += 1


def turn_text(t: dict) -> str:
    text = t["text"] if "text" in t else t["clean_text"]  # LoCoMo / REALTALK
    if t.get("blip_caption"):
        text += f" [shares a photo: {t['blip_caption']}]"
    return text


def norm_ws(s: str) -> str:
    return " ".join(s.split())


def norm_evidence(ev: list, valid: set[str]) -> tuple[list[str], int]:
    """Gold refs, normalised ('D1:3; D2:5', 'D:1:3', 'D1:03'); and how many were dropped."""
    out, dropped = [], 0
    for e in ev:
        for part in re.split(r"[;,\s]+", str(e)):
            if not part.strip():
                continue
            m = re.match(r"D:?(\d+):0*(\d+)\.?$", part.strip())
            ref = f"D{int(m.group(1))}:{int(m.group(2))}" if m else None
            if ref in valid:
                out.append(ref)
            else:
                dropped += 1
    return sorted(set(out)), dropped


def content_words(s: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", str(s).lower()) if w not in STOP}


def dataset(data: Path) -> tuple[str, dict[int, str]]:
    """Which data set ``data`` holds: (file glob, question categories scored)."""
    from . import realtalk

    if not any(data.glob("conv-*.json")) and any(data.glob(realtalk.GLOB)):
        return realtalk.GLOB, realtalk.CATS
    return "conv-*.json", CATS


def load(data: Path, convs: str) -> list[tuple[str, dict]]:
    """The conversations in ``data``; ``convs`` ('26,30' / '1,3') keeps those numbers only."""
    pattern = dataset(data)[0]
    files = sorted(data.glob(pattern))
    if convs:
        keep = set(convs.split(","))
        files = [f for f in files
                 if (m := re.match(r"[A-Za-z]+[-_](\d+)", f.stem)) and m.group(1) in keep]
    if not files:
        raise SystemExit(f"no {pattern} files in {data}")
    out = []
    for f in files:
        raw = json.loads(f.read_text())
        out.append((f.stem, raw))
    return out


def observations(conv: dict, n: int, iso: str, valid: set[str]):
    """Session ``n``'s own LLM-written notes as host-curated memories: one fact per observation
    (subject = the speaker, relation = the verb after the name, object = the rest, context = the
    sentence, refs = its dia_ids) and one episode of ``session_N_summary`` citing them all."""
    from ..tools.remember import Curated, CuratedEpisode, CuratedFact

    facts, refs_all = [], []
    for speaker, obs in (conv.get(f"session_{n}_observation") or {}).items():
        for item in obs:
            text, ev = item[0], item[1] if len(item) > 1 else []
            refs, _ = norm_evidence(ev if isinstance(ev, list) else [ev], valid)
            if not refs or not text.strip():
                continue
            rest = text[len(speaker):].strip() if text.startswith(speaker) else ""
            rel, _, obj = rest.partition(" ")
            if not (rel and obj):
                rel, obj = "noted", text
            facts.append(CuratedFact(subject=speaker, relation=rel, object=obj.rstrip("."),
                                     timestamp=iso, context=text, refs=refs))
            refs_all += refs
    summary = conv.get(f"session_{n}_summary") or ""
    episodes = [CuratedEpisode(title=f"session {n}", summary=summary, timestamp=iso,
                               refs=sorted(set(refs_all)))] if summary.strip() else []
    return Curated(episodes=episodes, facts=facts) if facts or episodes else None


def ingest(rt, ns: str, raw: dict, curated: str = "") -> int:
    from ..tools.remember import Message, remember

    conv = raw.get("conversation", raw)
    n_turns = 0
    valid: set[str] = set()
    for n, when, turns in sessions(conv):
        iso = parse_when(when)
        # REALTALK turns carry their own time; LoCoMo's share the session's
        msgs = [Message(content=turn_text(t), speaker=t["speaker"], ref=t["dia_id"],
                        timestamp=parse_when(t["date_time"]) if t.get("date_time") else iso)
                for t in turns]
        valid |= {t["dia_id"] for t in turns}
        cur = observations(conv, n, iso, valid) if curated == "observations" else None
        remember(rt, msgs, session_id=f"{ns}/session_{n}", session_time=iso, namespace=ns,
                 curated=cur)
        n_turns += len(turns)
    return n_turns


def consolidate_ns(rt, ns: str, min_cluster_size: int) -> dict:
    """Run the consolidate tool's code on one namespace; count active episodes/facts around it."""
    import anyio

    from ..tools.consolidate import consolidate

    space = rt.space(ns)

    def active() -> int:
        return sum(len(space.memories.of_kind(k)) for k in ("episode", "fact"))

    before = active()
    out = anyio.run(lambda: consolidate(rt, ns, False, min_cluster_size))
    after = active()
    ops = [op for op in out.operations if op.get("op") in ("merge", "supersede")
           and op.get("kind") in ("episode", "fact")]
    return {"active_before": before, "active_after": after, "clusters": out.clusters,
            "merged": sum(len(op["ids"]) for op in ops if op["op"] == "merge"),
            "superseded": sum(len(op["ids"]) for op in ops if op["op"] == "supersede"),
            "duration_s": out.duration_s}


def score(out, gold: list[str], texts: dict[str, str], answer: str, budget: int) -> dict:
    ctx = norm_ws(out.context)
    over = math.ceil(len(out.context) / 4) > budget
    got = {s.ref for s in out.sources if s.ref in texts and texts[s.ref] in ctx}
    words = content_words(answer)
    ctx_words = content_words(out.context)
    return {"R": len(got & set(gold)) / len(gold), "H": float(set(gold) <= got),
            "A": len(words & ctx_words) / len(words) if words else 1.0, "over": over,
            "abstain": out.abstain}


def summarise(rows: list[dict], cats: dict[int, str] = CATS) -> dict:
    def agg(rs):
        return {k: round(statistics.mean(r[k] for r in rs), 4) for k in ("R", "H", "A")} | {"n": len(rs)}

    lat = sorted(r["ms"] for r in rows)
    out = agg(rows)
    out["by_category"] = {cats[c]: agg([r for r in rows if r["cat"] == c])
                          for c in sorted(cats) if any(r["cat"] == c for r in rows)}
    # the same questions split by the kind auto's features give them (list/count questions
    # are not a LoCoMo category; this is where they show)
    kinds = sorted({r["kind"] for r in rows if "kind" in r})
    out["by_kind"] = {k: agg([r for r in rows if r.get("kind") == k]) for k in kinds}
    out["p50_ms"] = round(lat[len(lat) // 2], 1)
    out["p95_ms"] = round(lat[int(len(lat) * 0.95)], 1)
    out["over_budget"] = sum(r["over"] for r in rows)
    out["abstained"] = sum(r["abstain"] for r in rows)
    return out


def offtopic_questions(path: str) -> list[str]:
    lines = Path(path).read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def abstain_rates(rows: list[dict], off: list[bool]) -> dict:
    out = {"answerable_abstain_rate": round(sum(r["abstain"] for r in rows) / len(rows), 4)
           if rows else None}
    if off:
        out |= {"offtopic_abstain_rate": round(sum(off) / len(off), 4), "offtopic_n": len(off)}
    return out


def parse_options(pairs: list[str]) -> dict:
    """``--opt KEY=VALUE`` pairs; numbers stay numbers, the rest are strings."""
    options: dict = dict(kv.split("=", 1) for kv in pairs)
    for k, val in options.items():
        try:
            options[k] = json.loads(val)
        except ValueError:
            pass
    return options


def questions(raw: dict, cats, turn_ids: set, max_questions: int | None) -> tuple[list, int, int]:
    """The scored questions of one conversation with their gold turns; evidence ids that name
    no turn dropped (counted), questions left without evidence dropped (counted)."""
    qas, dropped, dropped_questions = [], 0, 0
    for qa in raw["qa"]:
        if qa.get("category") not in cats:
            continue
        gold, d = norm_evidence(qa.get("evidence", []), turn_ids)
        dropped += d
        dropped_questions += not gold
        if gold and not (max_questions and len(qas) >= max_questions):
            qas.append((qa, gold))
    return qas, dropped, dropped_questions


def ask(rt, ns: str, qa: dict, gold, texts: dict, strategies: list[str], budgets: list[int],
        options: dict, pause_s: float | None) -> dict:
    """One question through every strategy at every budget: (strategy, budget) -> (scored row,
    the context)."""
    from ..strategies.auto.features import features
    from ..tools.recall import recall

    kind = features(qa["question"])["kind"]
    out: dict = {}
    for s in strategies:
        for b in budgets:
            t1 = time.perf_counter()
            got = recall(rt, qa["question"], s, ns, b, options=options)
            ms = 1000 * (time.perf_counter() - t1)
            if pause_s:   # a host reads each answer before its next call
                time.sleep(pause_s)
            r = score(got, gold, texts, str(qa.get("answer", "")), b)
            out[(s, b)] = (r | {"cat": qa["category"], "ms": ms, "kind": kind}, got.context)
    return out


def run(args) -> dict:
    from ..server.settings import Settings
    from ..tools.recall import recall
    from ..tools.runtime import Runtime

    home = args.home or tempfile.mkdtemp(prefix="trimem-locomo-")
    rt = Runtime(Settings(home=home).to_config())
    strategies = args.strategies.split(",")
    # one or more stores, asked the same questions in the same run: "" / "heuristics" = curated by
    # trimem itself, "observations" = the conversations' own notes given as remember(curated=...)
    modes = [("" if m == "heuristics" else m) for m in str(args.curated).split(",")]
    if set(modes) - {"", "observations"}:
        raise SystemExit(f"--curated: unknown store in {args.curated!r}")
    options = parse_options(args.opt)
    budgets = [int(b) for b in str(args.budget).split(",")]
    def label(s, b, m):
        return f"{s}@{b}" + (f" {m or 'heuristics'}" if len(modes) > 1 else "")

    keys = [(s, b, m) for m in modes for s in strategies for b in budgets]
    results = {k: [] for k in keys}
    off_q = offtopic_questions(args.offtopic) if args.offtopic else []
    off_abstain = {k: [] for k in keys}
    t_ingest, n_turns, dropped, dropped_questions, n_q = 0.0, 0, 0, 0, 0
    consolidation: dict[str, dict] = {}
    cats = dataset(Path(args.data))[1]
    done: list[str] = []
    hashes: dict[str, list[str]] = {}

    def report(partial: bool) -> dict:
        return ({"date": datetime.now().strftime("%Y-%m-%d"), "questions": n_q, "options": options,
                "evidence_dropped": dropped, "questions_dropped": dropped_questions,
                "turns": n_turns, "categories": cats, "conversations": done, "partial": partial,
                "ingest_turns_per_s": round(n_turns / t_ingest, 1) if n_turns else None,
                "results": {label(*k): summarise(rows, cats) | abstain_rates(rows, off_abstain[k])
                            for k, rows in results.items() if rows},
                "curated": args.curated, "consolidation": consolidation,
                "embedder": rt.embedder_choice.as_dict() | {"model": rt.embedder.name}}
                | ({"context_sha1": hashes} if args.hash_contexts else {})
                | ({"per_question": {label(*k): [{f: r[f] for f in ("conv", "cat", "R", "H", "ms")}
                                                 for r in rows] for k, rows in results.items()}}
                   if args.per_question else {}))

    for name, raw in load(Path(args.data), args.convs):
        conv = raw.get("conversation", raw)
        texts = {t["dia_id"]: norm_ws(turn_text(t)) for _, _, ts in sessions(conv) for t in ts}
        qas, d, dq = questions(raw, cats, set(texts), args.max_questions)
        dropped, dropped_questions, n_q = dropped + d, dropped_questions + dq, n_q + len(qas)
        for mode in modes:
            ns = name if mode == modes[0] else f"{name}-{mode or 'heuristics'}"
            t0 = time.perf_counter()
            if args.reuse and rt.space(ns).sources.count():
                print(f"  {ns}: reusing the stored conversation", file=sys.stderr)
            else:
                n_turns += ingest(rt, ns, raw, mode)
            rt.curation.wait_idle()      # curation runs in the background; questions wait for it
            t_ingest += time.perf_counter() - t0
            if args.consolidate:
                consolidation[ns] = consolidate_ns(rt, ns, args.min_cluster_size)
            # the store as a host finds it after a pause: compacted and indexed (storage/upkeep.py;
            # the questions' own recall-log writes never leave the idle moment that would do it)
            rt.space(ns).upkeep.wait(timeout=600, flush=True)
            for qa, gold in qas:
                for (s, b), (r, context) in ask(rt, ns, qa, gold, texts, strategies, budgets,
                                                options, args.pause_s).items():
                    results[(s, b, mode)].append(r | {"conv": name})
                    if args.hash_contexts:   # to compare two runs question by question
                        hashes.setdefault(label(s, b, mode), []).append(
                            hashlib.sha1(context.encode()).hexdigest()[:12])
            for q in off_q:   # questions this memory cannot answer: a recall should abstain
                for s in strategies:
                    for b in budgets:
                        off_abstain[(s, b, mode)].append(
                            recall(rt, q, s, ns, b, options=options).abstain)
            print(f"  {ns}: done", file=sys.stderr)
        done.append(name)
        if args.json:    # a long run leaves its figures so far after each conversation
            Path(args.json).write_text(json.dumps(report(True), indent=2))
    return report(False)


def table(out: dict) -> str:
    cats = out.get("categories", CATS)
    lines = [f"{out['questions']} questions, {out['turns']} turns, ingest "
             f"{out['ingest_turns_per_s']} turns/s, malformed evidence dropped: "
             f"{out['evidence_dropped']} ids ({out.get('questions_dropped', 0)} questions left "
             "with none)", "",
             "| strategy@budget | R | H | A | " + " | ".join(f"{c} R/H" for c in cats.values())
             + " | p50 ms | p95 ms | abstain: answerable / off-topic |", "|---" * (7 + len(cats)) + "|"]
    for key, r in out["results"].items():
        cells = " | ".join(f"{r['by_category'][c]['R']:.3f}/{r['by_category'][c]['H']:.3f}"
                           if c in r["by_category"] else "-" for c in cats.values())
        off = (f"{r['offtopic_abstain_rate']:.3f} (n={r['offtopic_n']})"
               if r.get("offtopic_abstain_rate") is not None else "-")
        lines.append(f"| {key} | {r['R']:.3f} | {r['H']:.3f} | {r['A']:.3f} | {cells} | "
                     f"{r['p50_ms']} | {r['p95_ms']} | {r['answerable_abstain_rate']:.3f} / {off} |")
    kinds = sorted({k for r in out["results"].values() for k in r.get("by_kind", {})})
    if kinds:
        lines += ["", "| strategy@budget | " + " | ".join(
            f"{k} R/H (n={next(iter(out['results'].values()))['by_kind'][k]['n']})" for k in kinds)
            + " |", "|---" * (1 + len(kinds)) + "|"]
        for key, r in out["results"].items():
            lines.append(f"| {key} | " + " | ".join(
                f"{r['by_kind'][k]['R']:.3f}/{r['by_kind'][k]['H']:.3f}" for k in kinds) + " |")
    cons = out.get("consolidation") or {}
    if cons:
        b = sum(c["active_before"] for c in cons.values())
        a = sum(c["active_after"] for c in cons.values())
        lines.append(f"\nconsolidation: {b} -> {a} active episodes/facts "
                     f"({100 * (1 - a / b) if b else 0:.1f}% smaller), "
                     f"{sum(c['clusters'] for c in cons.values())} clusters, "
                     f"{sum(c['merged'] for c in cons.values())} merged, "
                     f"{sum(c['superseded'] for c in cons.values())} superseded, "
                     f"{sum(c['duration_s'] for c in cons.values()):.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data/locomo")
    ap.add_argument("--strategies", default="plain,auto")
    ap.add_argument("--budget", default="2000", help="one or more, comma-separated")
    ap.add_argument("--convs", default="", help="e.g. 26,30 (default: all in --data)")
    ap.add_argument("--max-questions", type=int, default=0,
                    help="ask only the first N (scored) questions of each conversation")
    ap.add_argument("--home", default="", help="store folder (default: a new temp folder)")
    ap.add_argument("--json", default="", help="also write the results here")
    ap.add_argument("--reuse", action="store_true",
                    help="skip ingesting conversations already in --home (for recall experiments)")
    ap.add_argument("--curated", default="",
                    help="observations: feed each session's session_N_observation / _summary "
                         "through remember(curated=...); a comma list (e.g. "
                         "heuristics,observations) asks the same questions of each store in one run")
    ap.add_argument("--consolidate", action="store_true",
                    help="run consolidation on each conversation after ingest; report compression")
    ap.add_argument("--min-cluster-size", type=int, default=10)
    ap.add_argument("--offtopic", default="",
                    help="a file of questions the memory cannot answer (bench/offtopic.txt), "
                         "asked in every namespace: reports how often each strategy abstains")
    ap.add_argument("--opt", action="append", default=[], metavar="KEY=VALUE",
                    help="strategy option passed to every recall (e.g. hops=2), repeatable")
    ap.add_argument("--pause-s", type=float, default=0.0,
                    help="pause after each timed recall (untimed), as a host reading the answer "
                         "does: background work after a recall then does not land in the next")
    ap.add_argument("--hash-contexts", action="store_true",
                    help="also write each question's context hash (per strategy@budget, in "
                         "question order) to --json, to compare two runs exactly")
    ap.add_argument("--per-question", action="store_true",
                    help="also write each question's R, H, latency and conversation (per "
                         "strategy@budget, in question order) to --json, for paired comparisons "
                         "(bench/paired.py)")
    args = ap.parse_args(argv)
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    print(table(out))


if __name__ == "__main__":
    main()
