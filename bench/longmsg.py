"""Long-message benchmark: facts at different depths of long assistant answers.

    python -m trimem.bench.longmsg --strategies plain,auto,hybrid,workspace,wiki --budget 2000

An IDE or chat host's memory is mostly ``user`` / ``assistant`` exchanges whose answers run to
thousands of characters. Each synthetic session here is one: a short user question about a
project, a long technical answer (3,000 or 7,000 characters of plausible engineering prose,
drawn with a fixed seed), and a few short follow-ups, some about the same topics in other
projects (distractors). One sentence of each answer holds a fact (a port, an owner, a deadline,
a pinned version, a backup site, a flag name) at a chosen depth: 10 %, 30 %, 50 %, 70 % or 90 % of
the way in. Every session goes through ``tools.remember.remember`` into one namespace, and one
question per fact goes through ``tools.recall.recall``.

Reported per strategy at each budget: **S**, the share of questions whose answer message is in
``sources`` (the LoCoMo rule), and **F**, the share whose fact sentence stands verbatim in
``context`` (whitespace-normalised): what an answering model needs. F is broken down by depth and
by answer length. Nothing here is fitted; the data are generated, so there is no in-sample issue.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone

PROJECTS = ["Falcon", "Juniper", "Otter", "Basalt", "Quill", "Meridian", "Lantern", "Cobalt",
            "Harbor", "Willow", "Sierra", "Tundra"]
PEOPLE = ["Priya", "Tomasz", "Keiko", "Oluwaseun", "Marta", "Dmitri", "Aisha", "Lucas"]
DEPTHS = [0.1, 0.3, 0.5, 0.7, 0.9]
LENGTHS = [3000, 7000]
# (fact sentence, question, topic words a distractor about another project repeats)
FACTS = [
    ("The metrics gateway of {p} listens on port {n}, because the security team reserved the "
     "default range for the new proxy.", "Which port does the {p} metrics gateway listen on?",
     "The {q} metrics gateway keeps dropping scrapes on its port."),
    ("{who} will own the on-call rotation for {p} from next month, so page them first.",
     "Who owns the on-call rotation for {p}?",
     "Who is on call for {q} this weekend? The rotation page is out of date."),
    ("The {p} migration must be finished by {date}, when the old database licence runs out.",
     "By when must the {p} migration be finished?",
     "The {q} migration slipped again, the licence question is still open."),
    ("We pinned protobuf to version {ver} for {p} because the next release broke the serializer.",
     "Which protobuf version is {p} pinned to?",
     "Did anyone check whether {q} needs the protobuf pin too?"),
    ("The {p} backups are replicated to the {site} site every six hours.",
     "Where are the {p} backups replicated to?",
     "The {q} backups failed last night, the replication job timed out."),
    ("The feature flag that turns on the new {p} checkout is called {flag}.",
     "What is the feature flag for the new {p} checkout called?",
     "The {q} checkout flag is still off in production, is that on purpose?"),
]
SITES = ["Reykjavik", "Osaka", "Porto", "Calgary", "Tallinn", "Adelaide"]
FILLER = [
    "Looking at the {p} service, the slow path is the serializer: every request builds the "
    "full object graph before it writes a byte, so large payloads spend most of their time in "
    "allocation. Streaming the response would cut peak memory by about {n} percent.",
    "The retry policy in the {p} client is too eager. It retries on every 5xx immediately, "
    "three times, without jitter, which turns a short outage into a thundering herd. Use "
    "exponential backoff starting at 200 ms and cap it at {n} seconds.",
    "For the database layer of {p} I would keep the ORM for writes and move the two reporting "
    "queries to plain SQL. The ORM generates a join per related field, and the query planner "
    "gives up on the order of joins past eight tables.",
    "Tests: the {p} suite takes {n} minutes because each test creates its schema from scratch. "
    "Creating it once per session and wrapping each test in a transaction that is rolled back "
    "at the end keeps isolation and removes most of that time.",
    "The deploy pipeline of {p} builds the container twice, once for the tests and once for the "
    "release. Building once and promoting the same image digest through the stages makes the "
    "artifact you tested the artifact you ship.",
    "On logging: {p} writes JSON lines at debug level in production, about {n} GB a day. Keep "
    "debug off by default, sample one request in a hundred at debug, and attach the request id "
    "to every line so a trace can be followed across services.",
    "Caching in {p} is keyed on the full URL including the tracking parameters, so the hit rate "
    "is low. Normalising the key (sorted query string, tracking parameters dropped) should "
    "bring it from about 30 to over {n} percent.",
    "The background workers of {p} share one queue for fast and slow jobs, so a burst of exports "
    "delays password-reset mails. Two queues with their own worker pools fix the priority "
    "inversion without any change to the jobs themselves.",
    "For the API of {p}, version the routes rather than the media type: clients you do not "
    "control handle a path prefix much better than an Accept header, and the gateway can route "
    "on it. Keep the old version for {n} months after the new one ships.",
    "Security review of {p}: the session cookie lacks SameSite and the admin routes accept GET "
    "for state changes. Set SameSite=Lax, make the admin actions POST only, and add a CSRF token "
    "to the two forms that still post without one.",
    "The frontend of {p} ships {n} kB of JavaScript on the first page, most of it a date library "
    "used for one widget. The platform's Intl API covers that widget, and code splitting the "
    "editor keeps the rest off the landing page.",
    "Monitoring for {p} alerts on CPU, which says little about users. Alert on the error ratio "
    "and on the p95 latency of the three endpoints that matter, with a burn-rate window, and "
    "keep CPU as a dashboard panel only.",
    "Configuration of {p} is spread over environment variables, a YAML file and hard-coded "
    "defaults, with no single place that says which wins. One settings class that reads all "
    "three in a fixed order, and fails at start-up on unknown keys, removes that guesswork.",
    "The {p} data model stores money as floating point. Store integer minor units with the "
    "currency beside them, convert at the edges, and add a migration that rounds the existing "
    "{n} thousand rows once, with a report of every row it changed.",
]
FOLLOW = ["Thanks, that is really helpful.", "Can you open a pull request for the first part?",
          "Let me check with the team and get back to you.", "Makes sense, let's do that."]


def build(seed: int = 7) -> tuple[list[dict], list[dict]]:
    """Sessions (messages per session) and questions, deterministic for ``seed``."""
    rng = random.Random(seed)
    sessions, questions = [], []
    k = 0
    for length in LENGTHS:
        for depth in DEPTHS:
            for fact, ask, distract in FACTS:
                p = PROJECTS[k % len(PROJECTS)] + ("" if k < len(PROJECTS) else f" {k // len(PROJECTS) + 1}")
                q = PROJECTS[(k + 5) % len(PROJECTS)]
                vals = {"p": p, "n": rng.randint(7000, 9999), "who": rng.choice(PEOPLE),
                        "date": f"{rng.randint(1, 28)} {rng.choice(['March', 'June', 'October'])}",
                        "ver": f"3.{rng.randint(10, 25)}.{rng.randint(0, 9)}",
                        "site": rng.choice(SITES),
                        "flag": f"{p.lower().replace(' ', '_')}_checkout_v{rng.randint(2, 9)}"}
                sentence = fact.format(**vals)
                answer = _answer(rng, p, length, depth, sentence)
                sid = f"longmsg-{k:03d}"
                sessions.append({"id": sid, "messages": [
                    {"content": f"Can you review the {p} service and tell me what to fix first?",
                     "speaker": "user", "ref": f"{sid}-q"},
                    {"content": answer, "speaker": "assistant", "ref": f"{sid}-a"},
                    {"content": rng.choice(FOLLOW), "speaker": "user", "ref": f"{sid}-f"},
                    {"content": distract.format(q=q), "speaker": "user", "ref": f"{sid}-d"}]})
                questions.append({"question": ask.format(**vals), "gold": f"{sid}-a",
                                  "fact": sentence, "depth": depth, "length": length})
                k += 1
    return sessions, questions


def _answer(rng: random.Random, p: str, length: int, depth: float, sentence: str) -> str:
    paras, pool = [], []
    while sum(len(x) + 2 for x in paras) < length:
        if not pool:
            pool = list(FILLER)
            rng.shuffle(pool)
        paras.append(pool.pop().format(p=p, n=rng.randint(5, 60)))
    text = "\n\n".join(paras)
    # put the fact after the sentence end nearest to the depth asked for
    target = int(depth * len(text))
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)", text)] or [len(text)]
    at = min(ends, key=lambda e: abs(e - target))
    return text[:at] + " " + sentence + text[at:]


def norm(s: str) -> str:
    return re.sub(r"\s+", " ", s).strip()


def run(args) -> dict:
    from ..server.settings import Settings
    from ..tools.recall import recall
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime

    home = args.home or tempfile.mkdtemp(prefix="trimem-longmsg-")
    strategies = args.strategies.split(",")
    # plain reads the raw messages only: without another strategy, curation is not needed
    rt = Runtime(Settings(home=home, curation=bool(set(strategies) - {"plain"})).to_config())
    sessions, questions = build(args.seed)
    ns = "longmsg"
    t0 = time.perf_counter()
    start = datetime(2026, 3, 2, 9, tzinfo=timezone.utc)
    ids: dict[str, str] = {}
    for n, sess in enumerate(sessions):
        when = (start + timedelta(days=n)).isoformat()
        msgs = [Message(content=m["content"], speaker=m["speaker"], ref=m["ref"], timestamp=when)
                for m in sess["messages"]]
        out = remember(rt, msgs, session_id=sess["id"], session_time=when, namespace=ns)
        ids.update({m["ref"]: i for m, i in zip(sess["messages"], out.source_ids)})
    rt.curation.wait_idle()
    ingest_s = time.perf_counter() - t0
    results = {}
    for s in strategies:
        for b in [int(x) for x in str(args.budget).split(",")]:
            rows = []
            for q in questions:
                out = recall(rt, q["question"], s, ns, b)
                rows.append({"S": ids[q["gold"]] in {x.id for x in out.sources},
                             "F": norm(q["fact"]) in norm(out.context),
                             "depth": q["depth"], "length": q["length"]})
            results[f"{s}@{b}"] = summarise(rows)
    return {"date": datetime.now().strftime("%Y-%m-%d"), "questions": len(questions),
            "sessions": len(sessions), "ingest_s": round(ingest_s, 1), "results": results}


def summarise(rows: list[dict]) -> dict:
    def share(rs, key):
        return round(sum(r[key] for r in rs) / len(rs), 3) if rs else None

    return {"S": share(rows, "S"), "F": share(rows, "F"),
            "F_by_depth": {str(d): share([r for r in rows if r["depth"] == d], "F") for d in DEPTHS},
            "F_by_length": {str(n): share([r for r in rows if r["length"] == n], "F") for n in LENGTHS}}


def table(out: dict) -> str:
    head = ("| strategy | S | F | " + " | ".join(f"F@{int(d * 100)}%" for d in DEPTHS) + " | "
            + " | ".join(f"F {n} ch" for n in LENGTHS) + " |")
    lines = [head, "|" + " --- |" * (3 + len(DEPTHS) + len(LENGTHS))]
    for k, r in out["results"].items():
        lines.append(f"| {k} | {r['S']:.3f} | {r['F']:.3f} | "
                     + " | ".join(f"{v:.3f}" for v in r["F_by_depth"].values()) + " | "
                     + " | ".join(f"{v:.3f}" for v in r["F_by_length"].values()) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--strategies", default="plain,auto,hybrid,workspace,wiki")
    ap.add_argument("--budget", default="2000", help="one or more, comma-separated")
    ap.add_argument("--home", help="store folder (default: a new temp folder)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", help="also write the results here")
    out = run(ap.parse_args(argv))
    print(table(out))
    print(f"{out['questions']} questions, {out['sessions']} sessions, ingest {out['ingest_s']} s",
          file=sys.stderr)
    if ap.parse_args(argv).json:
        with open(ap.parse_args(argv).json, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
