"""Capture benchmark: conversations lived as host sessions, captured by real ``trimem hook``
processes, then recalled — against the same conversations remembered directly.

    python -m trimem.bench.capture --data ../shared/data/locomo --budget 2000 --json cap.json

Each conversation gets a project folder (its namespace comes from the folder, as for a user)
and each of its sessions becomes a Claude Code transcript (``bench/cc_transcript.py``): the
conversation's first speaker is the ``user``, every other speaker the ``assistant``; each turn
is an entry whose ``uuid`` is the turn's id (so stored refs are the gold evidence ids) and whose
``timestamp`` is the turn's time. Around the turns, as an agent session has them: a thinking
block before some replies, a tool call and its result before every ``TOOL_EVERY``-th reply,
a long assistant write-up after every ``LONG_EVERY``-th exchange (engineering prose about a
made-up project; ``--long-kind salad``: random words). The transcript grows as a live
session does, and the hooks run as the host runs them, each a fresh process with the event's
JSON on stdin: ``SessionStart`` when a session opens, ``Stop`` after every exchange,
``PreCompact`` every ``COMPACT_EVERY`` exchanges, ``SessionEnd`` when it closes.

When the drainer has stored everything and curation has settled, every question goes through
``recall`` for each strategy over the captured namespace and over a namespace holding the
same turns remembered directly (one ``remember`` per session, the same speakers ``user`` /
``assistant``, refs, times and session ids, and none of the tool calls or write-ups); scored as
``bench/locomo.py`` scores (R, H, A). The ``UserPromptSubmit`` context for each question is
scored too: the text ``capture.hook.prompt_context`` returns (what the hook prints), within the
hook's budget, empty when recall abstains; ``--hook-checks`` questions per conversation are
also asked through a real hook process and must print the same text.

``--rescore --home DIR`` asks the questions again over the stores an earlier run left in
``DIR`` (captured and direct), with the recall code as it is now: for a change that touches only
recall, without capturing again.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
import uuid as uuidlib
from datetime import datetime, timedelta
from pathlib import Path

from .cc_transcript import Transcript
from .hookproc import HookRunner
from .longmsg import FILLER as PROSE
from .longmsg import PROJECTS
from .locomo import dataset, load, norm_evidence, norm_ws, parse_when, score, sessions, \
    summarise, turn_text

TOOL_EVERY = 4
LONG_EVERY = 7
COMPACT_EVERY = 12
WORDS = ("the build step checks each module and reports the files it could not read; a retry "
         "runs after the cache is cleared, and the summary lists what changed since the last "
         "run with the time each part took and the warnings it gave").split()


def _filler(rng: random.Random, n_chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_chars:
        sent = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
        out.append(sent[0].upper() + sent[1:] + ".")
        size += len(sent) + 2
    return " ".join(out)


def _write_up(rng: random.Random, n_chars: int, kind: str) -> str:
    """A long assistant reply: engineering prose about a made-up project (``prose``, what an
    agent host's long answers are like; ``bench/longmsg.py``'s paragraphs), or random words from
    a small vocabulary (``salad``, a harsher stand-in that shares common words with many
    questions)."""
    if kind == "salad":
        return "Here is the longer write-up you asked for. " + _filler(rng, n_chars)
    project = rng.choice(PROJECTS)
    paras: list[str] = []
    while sum(len(x) + 2 for x in paras) < n_chars:
        paras.append(rng.choice(PROSE).format(p=project, n=rng.randint(5, 60)))
    return "\n\n".join(paras)


def turn_times(conv: dict) -> dict[str, str]:
    """Each turn's time (ISO, UTC 'Z' as the host writes it): its own if it has one, else its
    session's plus 30 s per turn. Both stores get these same times."""
    out: dict[str, str] = {}
    for _, when, turns in sessions(conv):
        base = datetime.fromisoformat(parse_when(when))
        for i, t in enumerate(turns):
            at = datetime.fromisoformat(parse_when(t["date_time"])) if t.get("date_time") \
                else base + timedelta(seconds=30 * i)
            out[t["dia_id"]] = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return out


def _role(conv: dict) -> dict[str, str]:
    first = next(t["speaker"] for _, _, ts in sessions(conv) for t in ts)
    return {t["speaker"]: ("user" if t["speaker"] == first else "assistant")
            for _, _, ts in sessions(conv) for t in ts}


def live_sessions(name: str, conv: dict, root: Path, hooks: HookRunner, seed: int = 1,
                  tool_every: int = TOOL_EVERY, long_every: int = LONG_EVERY,
                  long_kind: str = "prose") -> dict:
    """Write ``conv``'s sessions as transcripts while running the hooks the host would run."""
    rng = random.Random(seed)
    role, times = _role(conv), turn_times(conv)
    cwd = root / "projects" / name
    (cwd / ".git").mkdir(parents=True, exist_ok=True)
    n = {"exchanges": 0, "tool_calls": 0, "long_replies": 0, "entries": 0}
    for k, _, turns in sessions(conv):
        sid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{name}/{k}"))
        path = root / "transcripts" / name / f"{sid}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        t = Transcript(path=path, session_id=sid, cwd=str(cwd))
        hooks.run("SessionStart", t.hook_input("SessionStart"))
        for i, turn in enumerate(turns):
            ts, text = times[turn["dia_id"]], turn_text(turn)
            if role[turn["speaker"]] == "user":
                t.user(text, ts, uuid=turn["dia_id"])
                continue
            if tool_every and (n["exchanges"] + 1) % tool_every == 0:
                words = " ".join(turn_text(turns[i - 1]).split()[:8]) if i else "notes"
                t.tool("WebSearch", {"query": words}, _filler(rng, rng.randint(300, 2500)), ts)
                n["tool_calls"] += 1
            t.assistant(text, ts, uuid=turn["dia_id"],
                        thinking=_filler(rng, 200) if rng.random() < 0.3 else None)
            nxt = turns[i + 1] if i + 1 < len(turns) else None
            if nxt is not None and role[nxt["speaker"]] == "assistant":
                continue          # the reply goes on: the host stops after its last part
            n["exchanges"] += 1
            if long_every and n["exchanges"] % long_every == 0:
                t.assistant(_write_up(rng, rng.randint(3000, 9000), long_kind), ts)
                n["long_replies"] += 1
            hooks.run("Stop", t.hook_input("Stop"))
            if n["exchanges"] % COMPACT_EVERY == 0:
                hooks.run("PreCompact", t.hook_input("PreCompact"))
        hooks.run("SessionEnd", t.hook_input("SessionEnd"))
        n["entries"] += t.count
    return n | {"cwd": str(cwd)}


def remember_directly(rt, ns: str, name: str, conv: dict) -> None:
    from ..tools.remember import Message, remember

    role, times = _role(conv), turn_times(conv)
    for k, when, turns in sessions(conv):
        sid = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"{name}/{k}"))
        msgs = [Message(content=turn_text(t), speaker=role[t["speaker"]], ref=t["dia_id"],
                        timestamp=times[t["dia_id"]]) for t in turns]
        remember(rt, msgs, session_id=sid, session_time=parse_when(when), namespace=ns)


def stored_refs(home: Path, namespace: str) -> list[str]:
    """The ref of every source row of ``namespace`` under ``home`` (a fresh reader)."""
    from ..server.settings import Settings
    from ..tools.runtime import Runtime

    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    try:
        if namespace not in rt.store.namespaces():
            return []
        return [str(r.ref) for r in rt.space(namespace).sources.all()]
    finally:
        rt.close(2.0)


def score_text(ctx: str, gold: list[str], texts: dict[str, str]) -> dict:
    got = {g for g in gold if texts[g] in norm_ws(ctx)}
    return {"R": len(got) / len(gold), "H": float(got == set(gold)), "A": 0.0, "over": False,
            "abstain": not ctx}


def run(args) -> dict:
    from ..capture.hook import prompt_context
    from ..capture.project import project_namespace
    from ..server.settings import Settings
    from ..tools.recall import recall
    from ..tools.runtime import Runtime

    root = Path(args.home or tempfile.mkdtemp(prefix="trimem-capture-"))
    cap_home, direct_home = root / "captured", root / "direct"
    hooks = HookRunner(cap_home, root, linger_s=args.linger_s)
    strategies = args.strategies.split(",")
    cats = dataset(Path(args.data))[1]
    convs = load(Path(args.data), args.convs)
    made: dict[str, dict] = {}
    t0 = time.perf_counter()
    for name, raw in convs:
        if args.rescore:   # the homes of an earlier run: only the questions are asked again
            made[name] = {"cwd": str(root / "projects" / name), "rescored": True}
            continue
        made[name] = live_sessions(name, raw.get("conversation", raw), root, hooks,
                                   tool_every=args.tool_every, long_every=args.long_every,
                                   long_kind=args.long_kind)
        print(f"  {name}: {made[name]['exchanges']} exchanges captured", file=sys.stderr)
    hooks.settle(timeout=3600)
    t_capture = time.perf_counter() - t0

    rt_d = Runtime(Settings(home=str(direct_home)).to_config())
    rt_c = Runtime(Settings(home=str(cap_home)).to_config())
    t1 = time.perf_counter()
    for name, raw in convs if not args.rescore else []:
        remember_directly(rt_d, name, name, raw.get("conversation", raw))
    rt_d.curation.wait_idle()
    t_direct = time.perf_counter() - t1
    rt_c.curation.wait_idle()
    rows: dict[str, list[dict]] = {}
    checks = {"asked": 0, "identical": 0}
    for name, raw in convs:
        conv = raw.get("conversation", raw)
        ns = project_namespace(made[name]["cwd"])
        rt_c.space(ns).upkeep.wait(timeout=600, flush=True)
        rt_d.space(name).upkeep.wait(timeout=600, flush=True)
        texts = {t["dia_id"]: norm_ws(turn_text(t)) for _, _, ts in sessions(conv) for t in ts}
        qas = [(qa, norm_evidence(qa.get("evidence", []), set(texts))[0]) for qa in raw["qa"]
               if qa.get("category") in cats]
        for j, (qa, gold) in enumerate((q, g) for q, g in qas if g):
            q, ans = qa["question"], str(qa.get("answer", ""))
            for s in strategies:
                for label, rt, space in (("captured", rt_c, ns), ("direct", rt_d, name)):
                    t2 = time.perf_counter()
                    out = recall(rt, q, s, space, args.budget)
                    r = score(out, gold, texts, ans, args.budget)
                    rows.setdefault(f"{s} {label}", []).append(
                        r | {"cat": qa["category"], "ms": 1000 * (time.perf_counter() - t2)})
            t3 = time.perf_counter()
            ctx = prompt_context(rt_c, ns, q, args.prompt_tokens)
            rows.setdefault("UserPromptSubmit captured", []).append(
                score_text(ctx, gold, texts) | {"cat": qa["category"],
                                                "ms": 1000 * (time.perf_counter() - t3)})
            if j < args.hook_checks:
                printed = hooks.prompt(made[name]["cwd"], q, args.prompt_tokens)
                checks["asked"] += 1
                checks["identical"] += printed == ctx
        print(f"  {name}: questions done", file=sys.stderr)
    rt_c.close()
    rt_d.close()
    lat = hooks.latency()
    return {"date": datetime.now().strftime("%Y-%m-%d"), "data": Path(args.data).name,
            "conversations": [n for n, _ in convs], "budget": args.budget,
            "prompt_tokens": args.prompt_tokens, "made": made,
            "long_kind": args.long_kind, "capture_s": round(t_capture, 1),
            "direct_ingest_s": round(t_direct, 1),
            "hook_latency_ms": lat, "hook_errors": hooks.errors, "prompt_hook_checks": checks,
            "results": {k: summarise(v, cats) for k, v in rows.items()}}


def table(out: dict) -> str:
    lines = [f"{out['data']}: {', '.join(out['conversations'])}; budget {out['budget']}; "
             f"capture {out['capture_s']} s; hook errors {len(out['hook_errors'])}; "
             f"prompt hook identical {out['prompt_hook_checks']}",
             "| strategy | captured R / H | direct R / H | diff R |", "|---|---|---|---|"]
    res = out["results"]
    for k in [k for k in res if k.endswith(" captured") and not k.startswith("UserPrompt")]:
        s = k.split()[0]
        c, d = res[k], res[f"{s} direct"]
        lines.append(f"| {s} | {c['R']:.3f} / {c['H']:.3f} | {d['R']:.3f} / {d['H']:.3f} "
                     f"| {100 * (c['R'] - d['R']):+.1f} |")
    u = res.get("UserPromptSubmit captured")
    if u:
        lines.append(f"| UserPromptSubmit@{out['prompt_tokens']} | {u['R']:.3f} / {u['H']:.3f} "
                     f"| | abstained {u['abstained']} of {u['n']} |")
    for ev, v in out["hook_latency_ms"].items():
        lines.append(f"hook {ev}: n {v['n']}, p50 {v['p50']} ms, p95 {v['p95']} ms, "
                     f"max {v['max']} ms")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--convs", default="")
    ap.add_argument("--strategies", default="plain,hybrid,workspace,wiki,auto")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--prompt-tokens", type=int, default=600)
    ap.add_argument("--hook-checks", type=int, default=3,
                    help="questions per conversation also asked through a real prompt hook")
    ap.add_argument("--tool-every", type=int, default=TOOL_EVERY,
                    help="a tool call and result before every N-th reply (0: none)")
    ap.add_argument("--long-every", type=int, default=LONG_EVERY,
                    help="a long write-up after every N-th exchange (0: none)")
    ap.add_argument("--long-kind", default="prose", choices=["prose", "salad"],
                    help="what the long write-ups say (see _write_up)")
    ap.add_argument("--linger-s", type=float, default=20.0)
    ap.add_argument("--home", default="")
    ap.add_argument("--rescore", action="store_true",
                    help="--home holds an earlier run's stores: ask the questions again (the "
                         "current recall code) without capturing or remembering anything")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    print(table(out))


if __name__ == "__main__":
    main()
