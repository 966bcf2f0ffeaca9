"""Capture under load and under attack: what the hooks cost the host, and what they never do.

    python -m trimem.bench.capture_ops [--sizes 1000,10000] [--n 50] [--repeats 100]
        [--kills 20] [--data DIR[,DIR]] [--json out.json]

- ``latency``: per size, a project namespace holding that many turns (filled by ``remember``
  with curation off, so the fill does not take hours; the hooks' own drainer curates what it
  captures), then ``n`` ``Stop`` hooks, each after one new exchange, and ``n`` ``SessionStart``
  hooks, each timed from spawn to exit as a host runs it (the drainer stores in the background
  meanwhile, as it does in a real session); and how long the drainer took to catch up after;
- ``repeats``: ``Stop`` fired again and again on an unchanged transcript: rows stored twice;
- ``kills``: the drainer killed with SIGKILL mid-store, round after round: messages lost or
  stored twice once the next hook's drainer caught up;
- ``secrets``: every planted credential (``bench/planted.py``) in user, assistant and tool
  entries: values found in any file under the memory folder, in recall (every strategy), in
  ``trimem export`` and in the ``trimem view`` pages;
- ``false_positives``: with ``--data``, every turn of those conversations through the redactor:
  how many it would change (none hold a credential), by kind.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

from .cc_transcript import Transcript
from .hookproc import HookRunner, hook_command
from .planted import planted

TOPICS = ("the deploy script", "the cache layer", "the login page", "the billing export",
          "the test fixtures", "the search index", "the release notes", "the backup job")


def _say(rng: random.Random, i: int) -> tuple[str, str]:
    topic = rng.choice(TOPICS)
    return (f"Step {i}: can you look at {topic} and tell me what changed since yesterday?",
            f"Step {i}: {topic} now retries twice and logs each failure with its cause; "
            f"the old timeout of {rng.randint(5, 90)} s is gone. " * rng.randint(1, 4))


def _fill(home: Path, ns: str, size: int, rng: random.Random) -> float:
    from ..server.settings import Settings
    from ..tools.remember import Message, remember
    from ..tools.runtime import Runtime

    t0 = time.perf_counter()
    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    try:
        for start in range(0, size, 200):
            msgs = []
            for i in range(start, min(size, start + 200), 2):
                ask, reply = _say(rng, i)
                msgs += [Message(content=ask, speaker="user", ref=f"fill-{i}"),
                         Message(content=reply, speaker="assistant", ref=f"fill-{i + 1}")]
            remember(rt, msgs, session_id=f"fill-{start // 200}", namespace=ns)
        rt.space(ns).upkeep.wait(timeout=1800, flush=True)
    finally:
        rt.close()
    return time.perf_counter() - t0


def latency(root: Path, size: int, n: int) -> dict:
    from ..capture.project import project_namespace

    rng = random.Random(size)
    proj = root / f"proj-{size}"
    (proj / ".git").mkdir(parents=True, exist_ok=True)
    home = root / f"home-{size}"
    fill_s = _fill(home, project_namespace(str(proj)), size, rng)
    hooks = HookRunner(home, root)
    t = Transcript(path=root / f"t-{size}.jsonl", session_id=f"lat-{size}", cwd=str(proj))
    for i in range(n):
        ask, reply = _say(rng, 10_000_000 + i)
        ts = f"2026-11-20T10:{i % 60:02d}:00Z"
        t.user(ask, ts)
        t.assistant(reply, ts)
        hooks.run("Stop", t.hook_input("Stop"))
    settle_s = hooks.settle(timeout=3600)
    for _ in range(n):
        hooks.run("SessionStart", t.hook_input("SessionStart") | {"source": "startup"})
    return {"stored_before": size, "fill_s": round(fill_s, 1), "hooks": hooks.latency(),
            "catch_up_s": round(settle_s, 1), "errors": hooks.errors}


def repeats(root: Path, n: int) -> dict:
    from .capture import stored_refs

    hooks = HookRunner(root / "home-rep", root, TRIMEM_HOOK_NAMESPACE="rep")
    t = Transcript(path=root / "t-rep.jsonl", session_id="rep", cwd=str(root))
    rng = random.Random(3)
    for i in range(20):
        ask, reply = _say(rng, i)
        t.user(ask, "2026-11-21T09:00:00Z")
        t.assistant(reply, "2026-11-21T09:00:05Z")
    for _ in range(n):
        hooks.run("Stop", t.hook_input("Stop"))
    hooks.settle(timeout=600)
    refs = stored_refs(root / "home-rep", "rep")
    return {"stops": n, "entries": t.count, "stored": len(refs),
            "stored_twice": len(refs) - len(set(refs)), "lost": len(set(t.uuids) - set(refs)),
            "errors": hooks.errors}


def kills(root: Path, rounds: int) -> dict:
    from ..capture.state import CaptureState
    from .capture import stored_refs

    home = root / "home-kill"
    hooks = HookRunner(home, root, TRIMEM_HOOK_NAMESPACE="kill")
    state = CaptureState(str(home))
    t = Transcript(path=root / "t-kill.jsonl", session_id="kill", cwd=str(root))
    rng = random.Random(5)
    killed = 0
    for rnd in range(rounds):
        for i in range(30):
            ask, reply = _say(rng, rnd * 100 + i)
            t.user(ask, f"2026-11-22T{rnd % 24:02d}:{i:02d}:00Z")
            t.assistant(reply * 3, f"2026-11-22T{rnd % 24:02d}:{i:02d}:30Z")
        hooks.run("Stop", t.hook_input("Stop"))
        end = time.monotonic() + 30
        pid = None
        while pid is None and time.monotonic() < end:
            pid = state.drainer_pid()
            time.sleep(0.05)
        time.sleep(0.5 + 4.0 * rng.random())   # before the store opens .. mid-way through
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        end = time.monotonic() + 10
        while state.drainer_running() and time.monotonic() < end:
            time.sleep(0.05)
    hooks.run("SessionEnd", t.hook_input("SessionEnd"))
    hooks.settle(timeout=1800)
    refs = stored_refs(home, "kill")
    return {"rounds": rounds, "killed": killed, "entries": t.count, "stored": len(refs),
            "stored_twice": len(refs) - len(set(refs)), "lost": len(set(t.uuids) - set(refs)),
            "errors": hooks.errors}


def secrets(root: Path) -> dict:
    import anyio
    import httpx2

    from ..server.settings import Settings
    from ..server.view import routes
    from ..strategies.registry import names as strategy_names
    from ..tools.recall import recall
    from ..tools.runtime import Runtime

    home = root / "home-sec"
    hooks = HookRunner(home, root, TRIMEM_HOOK_NAMESPACE="sec")
    t = Transcript(path=root / "t-sec.jsonl", session_id="sec", cwd=str(root))
    plant = planted()
    for i, p in enumerate(plant):
        ts = f"2026-11-23T11:{i:02d}:00Z"
        if i % 3 == 0:
            t.user(f"note for later: {p.sentence}", ts)
            t.assistant("Noted, I will use it for the staging setup.", ts)
        elif i % 3 == 1:
            t.user("what did we set up for staging?", ts)
            t.assistant(f"We set this up: {p.sentence}", ts)
        else:
            t.tool("Bash", {"command": "cat .env.staging"}, f"loaded:\n{p.sentence}\n", ts)
    hooks.run("Stop", t.hook_input("Stop"))
    hooks.settle(timeout=600)
    values = {p.kind: p.value.encode() for p in plant}
    blob = b"".join(f.read_bytes() for f in home.rglob("*") if f.is_file())
    found = {"files": sorted(k for k, v in values.items() if v in blob)}
    rt = Runtime(Settings(home=str(home)).to_config())
    try:
        rt.curation.wait_idle(600)
        texts = []
        for s in strategy_names():
            for q in ("what credentials and keys did we set up for staging?",
                      "staging password token key", *(p.sentence[:60] for p in plant[:6])):
                texts.append(recall(rt, q, s, "sec", 2000).context)
        found["recall"] = sorted(k for k, v in values.items() if v.decode() in "\n".join(texts))

        async def pages() -> str:
            app = routes(rt)
            async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app),
                                          base_url="http://127.0.0.1") as c:
                got = [await c.get("/"), await c.get("/ns", params={"name": "sec"}),
                       await c.get("/session", params={"ns": "sec", "id": "sec"}),
                       await c.get("/recall", params={"ns": "sec", "q": "staging keys"})]
            return "\n".join(r.text for r in got)

        html = anyio.run(pages)
        found["view"] = sorted(k for k, v in values.items() if v.decode() in html)
    finally:
        rt.close()
    out = root / "export.jsonl"
    subprocess.run([*hook_command()[:-1], "export", str(out), "--quiet"], check=True,
                   env=dict(os.environ, TRIMEM_HOME=str(home)), capture_output=True)
    data = out.read_bytes()
    found["export"] = sorted(k for k, v in values.items() if v in data)
    return {"planted": len(plant), "kinds": len(values), "found": found,
            "redacted_marks": blob.count(b"[redacted: ") > 0, "errors": hooks.errors}


def false_positives(dirs: list[Path]) -> dict:
    from ..capture.redact import redact
    from .locomo import load, sessions, turn_text

    turns = 0
    changed: Counter = Counter()
    examples: list[str] = []
    for d in dirs:
        for _, raw in load(d, ""):
            for _, _, ts in sessions(raw.get("conversation", raw)):
                for t in ts:
                    text = turn_text(t)
                    turns += 1
                    r = redact(text)
                    if r.text != text:
                        changed.update(r.kinds)
                        if len(examples) < 5:
                            examples.append(r.text[:160])
    return {"turns": turns, "changed": sum(changed.values()), "kinds": dict(changed),
            "rate": round(sum(changed.values()) / max(turns, 1), 5), "examples": examples}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--data", default="")
    ap.add_argument("--only", default="latency,repeats,kills,secrets,false_positives")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    root = Path(tempfile.mkdtemp(prefix="trimem-capops-"))
    out: dict = {"date": datetime.now().strftime("%Y-%m-%d")}
    if "false_positives" in only and args.data:
        out["false_positives"] = false_positives([Path(d) for d in args.data.split(",")])
        print(json.dumps(out["false_positives"]), file=sys.stderr)
    if "secrets" in only:
        out["secrets"] = secrets(root)
        print(json.dumps(out["secrets"]), file=sys.stderr)
    if "repeats" in only:
        out["repeats"] = repeats(root, args.repeats)
        print(json.dumps(out["repeats"]), file=sys.stderr)
    if "kills" in only and os.name == "posix":
        out["kills"] = kills(root, args.kills)
        print(json.dumps(out["kills"]), file=sys.stderr)
    if "latency" in only:
        out["latency"] = [latency(root, int(s), args.n) for s in args.sizes.split(",") if s]
        for r in out["latency"]:
            print(json.dumps(r), file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
