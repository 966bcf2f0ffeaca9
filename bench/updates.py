"""Knowledge updates: facts that change over sessions, asked for their CURRENT value.

    python -m trimem.bench.updates --strategies plain,hybrid,workspace,wiki,auto --budget 2000

Synthetic multi-session conversations, written here from our own templates (nothing from any
benchmark data set): people say where they live, where they work, what they drive, their
partner's and their pet's names; in a later session the value changes (sometimes twice) and may
be restated; distractor turns (small talk, other people's values, near-miss topics) fill every
session. Conversations are a ``user`` / ``assistant`` chat and group chats of named people.
Everything goes in through ``tools.remember.remember`` (one call per session) and every question
("Where does Noor live now?", "Where do I work now?") through ``tools.recall.recall``, as in
:mod:`trimem.bench.locomo`. Per strategy:

* ``current``: share of questions whose context quotes (verbatim, listed in ``sources``) a turn
  stating the current value;
* ``current_first``: of questions whose context quotes both a current and a superseded turn,
  the share where the current one comes first;
* ``stale_only``: share of questions whose context quotes a superseded value but no current one;
* ``marked``: of questions whose context quotes a superseded turn, the share where every such
  turn is followed by a ``[changed later`` line (``strategies/wiki/revisions.py``);
* ``false_marks``: of all such marks in the contexts, the share under a turn that states no
  superseded value of anyone in that conversation.

``--opt k=v`` passes a recall option to every strategy (``--opt current_first=0``: the same run
without the changed-fact order and marks).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

# attribute -> (values, first statements, change statements, restatements, question)
ATTRS = {
    "city": (["Tallinn", "Ghent", "Porto", "Bergen", "Kraków", "Lyon", "Leeds", "Tampere",
              "Aarhus", "Bologna", "Graz", "Cork", "Utrecht", "Brno", "Malmö"],
             ["I live in {v}, in a tiny flat near the river.", "Home for me is {v} these days."],
             ["Big news: I moved to {v} last weekend!", "We finally packed up and moved to {v}.",
              "I just signed the lease on a place in {v}, moving in now."],
             ["Still getting used to the trams here in {v}.", "{v} is growing on me, honestly."],
             "Where does {who} live now?"),
    "job": (["a bakery", "the city library", "a bike repair shop", "a shipping firm",
             "a dental clinic", "a small game studio", "the botanical garden", "a print shop",
             "the county hospital", "a solar installer", "a language school", "a ferry company",
             "an architecture office"],
            ["I work at {v}, mostly early shifts.", "My job at {v} keeps me busy."],
            ["I handed in my notice and started at {v} on Monday.",
             "New job! I'm at {v} now.", "Changed jobs this month, I work for {v} now."],
            ["Long day at {v} again.", "The team at {v} is really friendly."],
            "Where does {who} work now?"),
    "car": (["a red hatchback", "an old pickup truck", "a blue station wagon",
             "a silver minivan", "a green convertible", "a white delivery van", "a yellow coupe",
             "a black sedan", "an orange camper van", "a grey estate car", "a small electric car",
             "a vintage roadster"],
            ["I drive {v}, it's ancient but it runs.", "I get around in {v}."],
            ["Sold my old car and bought {v} yesterday.", "I traded in the old one for {v}."],
            ["Took {v} out for a long drive on Sunday."],
            "What car does {who} drive now?"),
    "partner": (["Elif", "Marek", "Sunniva", "Dario", "Anouk", "Teodor", "Maren", "Ilkka",
                 "Paloma", "Radu", "Zofia", "Emeka", "Linnea"],
                ["My partner {v} says hello to everyone.", "{v} and I are going hiking soon."],
                ["I'm not with my ex any more. I'm seeing someone new, {v}.",
                 "Things ended with my last partner; I've been dating {v} for a few weeks."],
                ["{v} cooked dinner for us tonight."],
                "What is the name of {whose} partner now?"),
    "pet": (["a cat called Quince", "a dog named Pepper", "a parrot called Kiwi",
             "a rabbit named Clover", "a tortoise called Dot", "a hamster named Biscotti",
             "a dog called Juniper", "a cat named Waffle", "a ferret called Noodle",
             "a goldfish named Comet", "a lizard called Ziggy", "a dog named Tofu"],
            ["I have {v} who sleeps on my keyboard.", "At home it's just me and {v}."],
            ["We adopted {v} from the shelter this week!", "Meet the new family member: {v}."],
            ["{v} knocked a plant over again."],
            "What pet does {who} have now?"),
}
SMALL_TALK = ["The weather has been grey all week.", "Did anyone watch the match last night?",
              "I'm trying to drink less coffee, it's not going well.", "Happy Friday, everyone.",
              "I finished that crime novel, the ending was odd.", "My phone screen cracked again.",
              "Does anyone know a good recipe for lentil soup?", "The bus was late three times.",
              "I've started running in the mornings.", "That concert was louder than expected.",
              "I need a haircut badly.", "We should plan a picnic when it warms up."]
CHATTER = (["The weather", "The bus", "The new café on the corner", "Work", "The match",
            "That documentary", "My sister", "The gym", "The garden", "The neighbours' dog",
            "The quiz night", "My phone", "The market", "The book club", "Traffic"],
           ["has been {a} all week.", "was {a} again today.", "is {a}, honestly.",
            "felt a bit {a} this time.", "turned out {a}, who knew."],
           ["grey", "chaotic", "lovely", "exhausting", "surprisingly fun", "loud", "slow",
            "weird", "brilliant", "disappointing"])
NEAR_MISS = {"city": "My cousin just moved to {o}; I'd never leave my place though.",
             "job": "A friend of mine got an offer from {o}.",
             "car": "My neighbour bought {o}, it's so shiny.",
             "partner": "My sister's partner {o} is visiting next month.",
             "pet": "The people downstairs have {o}."}
ASSISTANT = ["That sounds like a big change, congratulations.", "Thanks for telling me, noted.",
             "How are you feeling about it?", "Good to hear from you again.",
             "That's interesting, tell me more.", "I'll keep that in mind."]
GROUP = [["Noor", "Tomasz", "Ifeoma"], ["Kasper", "Rhea", "Bo", "Yusuf"]]


@dataclass
class Question:
    question: str
    current: set[str] = field(default_factory=set)   # refs of turns stating the current value
    stale: set[str] = field(default_factory=set)     # refs of turns stating superseded values


def chatter(rng: random.Random, k: int) -> list[str]:
    lines = SMALL_TALK + [f"{x} {y.format(a=a)}" for x in CHATTER[0] for y in CHATTER[1]
                          for a in CHATTER[2]]
    return rng.sample(lines, k=k)


def conversation(seed: int, people: list[str], n_sessions: int = 8, filler: int = 28):
    """(sessions, questions): ``sessions`` is a list of (iso date, [(speaker, text, ref)])."""
    rng = random.Random(seed)
    chat = people == ["user"]
    talkers = ["user", "assistant"] if chat else people
    plan: dict[tuple[str, str], list[tuple[int, str, str]]] = {}   # (who, attr) -> events
    used: set[str] = set()           # no two people share a value (their lines would match)
    for who in people:
        for attr in rng.sample(sorted(ATTRS), k=4 if chat else 3):
            values = rng.sample([x for x in ATTRS[attr][0] if x not in used], k=3)
            used.update(values)
            first = rng.randrange(0, 2)
            changes = sorted(rng.sample(range(first + 1, n_sessions), k=rng.choice([1, 1, 2])))
            events = [(first, "first", values[0])]
            events += [(s, "change", values[k + 1]) for k, s in enumerate(changes)]
            late = [s for s in range(changes[-1] + 1, n_sessions)]
            if late and rng.random() < 0.5:
                events.append((rng.choice(late), "again", values[len(changes)]))
            plan[(who, attr)] = events
    sessions, said = [], {}          # said: (who, attr) -> [(ref, value)]
    start = datetime(2025, 3, 3, 18, 0) + timedelta(days=rng.randrange(60))
    for s in range(n_sessions):
        lines: list[tuple[str, str, tuple | None]] = []
        for (who, attr), events in plan.items():
            for at, kind, value in events:
                if at == s:
                    vals, firsts, chg, again, _ = ATTRS[attr]
                    pool = {"first": firsts, "change": chg, "again": again}[kind]
                    lines.append((who, rng.choice(pool).format(v=value), (who, attr, value)))
        for text in chatter(rng, rng.randrange(filler - 4, filler + 5)):
            lines.append((rng.choice(people), text, None))
        attr = rng.choice(sorted(NEAR_MISS))
        who = rng.choice(people)
        lines.append((who, NEAR_MISS[attr].format(o=rng.choice(ATTRS[attr][0])), None))
        rng.shuffle(lines)
        turns = []
        for who, text, fact in lines:
            if chat and turns and turns[-1][0] == "user":
                turns.append(("assistant", rng.choice(ASSISTANT), f"S{s + 1}:{len(turns) + 1}"))
            ref = f"S{s + 1}:{len(turns) + 1}"
            turns.append((who, text, ref))
            if fact:
                said.setdefault(fact[:2], []).append((ref, fact[2]))
        sessions.append(((start + timedelta(days=9 * s)).isoformat(), turns))
    assert set(t[0] for _, ts in sessions for t in ts) <= set(talkers)
    questions = []
    for (who, attr), events in plan.items():
        current = events[-1][2]
        q = ATTRS[attr][4]
        text = (q.replace("does {who}", "do I").replace("{whose}", "my") if who == "user"
                else q.format(who=who, whose=f"{who}'s"))
        refs = said[(who, attr)]
        questions.append(Question(text, {r for r, v in refs if v == current},
                                  {r for r, v in refs if v != current}))
    return sessions, questions


def corpus(n_chats: int, seed: int, n_sessions: int = 8, filler: int = 28):
    """``n_chats`` user/assistant chats and the group chats, each (name, sessions, questions)."""
    out = [(f"chat-{k + 1}", *conversation(seed + k, ["user"], n_sessions, filler))
           for k in range(n_chats)]
    out += [(f"group-{k + 1}", *conversation(seed + 100 + k, g, n_sessions, filler))
            for k, g in enumerate(GROUP)]
    return out


MARK = "[changed later"


def _marked(context: str, texts: dict[str, str]) -> set[str]:
    """Refs whose line in ``context`` is followed by a changed-later mark."""
    lines = context.split("\n")
    out = set()
    for n, line in enumerate(lines[:-1]):
        if lines[n + 1].startswith(MARK):
            flat = " ".join(line.split())
            out |= {r for r, t in texts.items() if t and flat.endswith(t)}
    return out


def score(out, q: Question, texts: dict[str, str], stale_any: set[str]) -> dict:
    ctx = " ".join(out.context.split())
    pos = {s.ref: ctx.find(texts[s.ref]) for s in out.sources if s.ref in texts}
    pos = {r: p for r, p in pos.items() if p >= 0}
    cur = [p for r, p in pos.items() if r in q.current]
    old = [p for r, p in pos.items() if r in q.stale]
    marked = _marked(out.context, texts)
    quoted_stale = {r for r in pos if r in q.stale}
    return {"current": float(bool(cur)), "stale": float(bool(old)),
            "both": bool(cur and old), "current_first": bool(cur and old and min(cur) < min(old)),
            "stale_only": float(bool(old) and not cur),
            "all_marked": bool(quoted_stale) and quoted_stale <= marked,
            "marks": len(marked), "false_marks": len(marked - stale_any)}


def summarise(rows: list[dict]) -> dict:
    both = [r for r in rows if r["both"]]
    return {"n": len(rows), "current": round(statistics.mean(r["current"] for r in rows), 3),
            "stale_in_context": round(statistics.mean(r["stale"] for r in rows), 3),
            "current_first": round(sum(r["current_first"] for r in both) / len(both), 3)
            if both else None, "both_n": len(both),
            "stale_only": round(statistics.mean(r["stale_only"] for r in rows), 3),
            "marked": round(sum(r["all_marked"] for r in rows if r["stale"]) /
                            max(1, sum(1 for r in rows if r["stale"])), 3),
            "false_marks": round(sum(r["false_marks"] for r in rows) /
                                 max(1, sum(r["marks"] for r in rows)), 3),
            "p50_ms": round(sorted(r["ms"] for r in rows)[len(rows) // 2], 1)}


def run(args) -> dict:
    from ..server.settings import Settings
    from ..tools.recall import recall
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime

    home = args.home or tempfile.mkdtemp(prefix="trimem-updates-")
    rt = Runtime(Settings(home=home).to_config())
    strategies, budget = args.strategies.split(","), int(args.budget)
    opts = dict(kv.split("=", 1) for kv in args.opt)
    rows: dict[str, list[dict]] = {s: [] for s in strategies}
    n_turns = n_q = 0
    for name, sessions, questions in corpus(args.chats, args.seed, args.sessions, args.filler):
        texts = {}
        for k, (iso, turns) in enumerate(sessions):
            msgs = [Message(content=t, speaker=who, ref=ref, timestamp=iso)
                    for who, t, ref in turns]
            texts |= {ref: " ".join(t.split()) for _, t, ref in turns}
            remember(rt, msgs, session_id=f"{name}/s{k + 1}", session_time=iso, namespace=name)
            n_turns += len(turns)
        rt.curation.wait_idle()
        n_q += len(questions)
        stale_any = {r for q in questions for r in q.stale}
        for q in questions:
            for s in strategies:
                t0 = time.perf_counter()
                out = recall(rt, q.question, s, name, budget, options=opts)
                rows[s].append(score(out, q, texts, stale_any) |
                               {"ms": 1000 * (time.perf_counter() - t0)})
        print(f"  {name}: {len(questions)} questions", file=sys.stderr)
    return {"date": datetime.now().strftime("%Y-%m-%d"), "turns": n_turns, "questions": n_q,
            "budget": budget, "seed": args.seed, "options": opts,
            "results": {s: summarise(r) for s, r in rows.items() if r}}


def table(out: dict) -> str:
    lines = [f"{out['questions']} questions, {out['turns']} turns, budget {out['budget']}", "",
             "| strategy | current in context | current first (n both) | stale only | "
             "stale in context | stale marked | false marks | p50 ms |",
             "|---|---|---|---|---|---|---|---|"]
    for s, r in out["results"].items():
        first = "-" if r["current_first"] is None else f"{r['current_first']:.3f}"
        lines.append(f"| {s} | {r['current']:.3f} | {first} ({r['both_n']}) | "
                     f"{r['stale_only']:.3f} | {r['stale_in_context']:.3f} | "
                     f"{r['marked']:.3f} | {r['false_marks']:.3f} | {r['p50_ms']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--strategies", default="plain,hybrid,workspace,wiki,auto")
    ap.add_argument("--budget", default="2000")
    ap.add_argument("--chats", type=int, default=3, help="user/assistant chats (plus 2 groups)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--filler", type=int, default=28, help="distractor turns per session (mean)")
    ap.add_argument("--home", default="", help="store folder (default: a new temp folder)")
    ap.add_argument("--json", default="")
    ap.add_argument("--opt", action="append", default=[], metavar="K=V",
                    help="a recall option for every strategy (repeatable)")
    args = ap.parse_args(argv)
    out = run(args)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    print(table(out))


if __name__ == "__main__":
    main()
