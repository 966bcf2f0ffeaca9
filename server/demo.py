"""``trimem demo``: the whole loop through a real MCP client, offline, with no configuration."""

from __future__ import annotations

import os
import tempfile
import time

from mcp import Client

from .app import build_server
from .settings import load_settings

CONVERSATION = [
    ("2024-03-02T10:00:00Z", [
        ("user", "I'm starting a new job at Lumen Robotics in Lisbon next month."),
        ("assistant", "Congratulations! What will you work on there?"),
        ("user", "Motion planning for their warehouse arms. My manager is called Inês."),
        ("user", "Also, I'm allergic to peanuts, so please keep that in mind for recipes."),
    ]),
    ("2024-04-15T18:30:00Z", [
        ("user", "We adopted a rescue greyhound last weekend, her name is Pixel."),
        ("assistant", "Lovely! How is Pixel settling in?"),
        ("user", "She sleeps all day and sprints at 6 pm sharp. The kids adore her."),
    ]),
    ("2024-06-20T09:15:00Z", [
        ("user", "Inês asked me to lead the grasping project from July."),
        ("user", "I'm learning Portuguese on Tuesdays and Thursdays to settle in."),
    ]),
]
QUESTIONS = ["What is my dog called?", "Who is my manager and what do I work on?",
             "Any food allergies I mentioned?"]


async def run_demo(keep: bool = False) -> int:
    tmp = None
    if not keep:
        tmp = tempfile.TemporaryDirectory(prefix="trimem-demo-")
        os.environ["TRIMEM_HOME"] = tmp.name
    settings = load_settings()
    print(f"trimem demo · memory folder: {settings.home}\n")
    server = build_server(settings)
    async with Client(server) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        print("tools:", ", ".join(tools))
        t0 = time.perf_counter()
        for n, (when, turns) in enumerate(CONVERSATION, 1):
            msgs = [{"content": text, "speaker": who, "ref": f"demo-{n}.{k}", "timestamp": when}
                    for k, (who, text) in enumerate(turns, 1)]
            res = await client.call_tool("remember", {"messages": msgs, "namespace": "demo",
                                                      "session_id": f"demo-session-{n}"})
            _check(res)
        print(f"remembered {sum(len(t) for _, t in CONVERSATION)} messages in "
              f"{len(CONVERSATION)} sessions ({time.perf_counter() - t0:.2f} s, first call loads "
              "the embedding model)\n")
        last: dict = {}
        for q in QUESTIONS:
            out = _check(await client.call_tool("recall", {"query": q, "namespace": "demo",
                                                           "budget_tokens": 70}))
            last = out
            print(f"recall: {q!r}  ({out['strategy']}, {out['tokens']} tokens)")
            for s in out["sources"]:
                print(f"   [{s['ref']}] {s['speaker']}: {s['text']}")
            print()
        exp = _check(await client.call_tool("explain", {"id": last["recall_id"], "namespace": "demo"}))
        print("explain(recall_id):", exp["summary"])
    server.runtime.close()   # background curation must not write into a deleted folder
    if tmp is not None:
        tmp.cleanup()
    return 0


def _check(res) -> dict:
    if res.is_error:
        raise SystemExit("tool error: " + " ".join(getattr(c, "text", "") for c in res.content))
    return res.structured_content
