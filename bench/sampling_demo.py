"""A transcript of trimem's MCP prompts and of curation through sampling, as a host sees them.

    python -m trimem.bench.sampling_demo [--out FILE.md]

Runs the real server in memory with a real ``mcp.Client`` whose ``sampling_callback`` is a
scripted host model (:class:`ScriptedHost`: deterministic answers built from the request, or
garbage, a refusal, a hang). Prints, as Markdown: the prompts as listed and filled; one
``consolidate`` that curates a session through sampling (the request the server sent, the
answer, the rows stored and what ``explain`` says); what a merge writes (heuristic, then the
host's rewrite); and what happens when the host declines, answers garbage or never answers.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

import anyio
from mcp.types import CreateMessageResult, ErrorData, TextContent

CONVERSATION = [
    {"content": "I adopted a beagle named Biscuit last Saturday!", "speaker": "Ben", "ref": "m1"},
    {"content": "Biscuit sleeps on my bed every night.", "speaker": "Ben", "ref": "m2"},
    {"content": "I live in Lisbon and I love the trams.", "speaker": "Ana", "ref": "m3"}]


def text_of(block) -> str:
    """The text of a content block that must be text (prompts and tool answers here are)."""
    assert isinstance(block, TextContent), block
    return block.text


class ScriptedHost:
    """A host model for tests and this demo; ``mode``: good | garbage | refuse | hang | flood
    (every list of the answer as long as the schema allows, every item distinct and valid)."""

    def __init__(self, mode: str = "good", hang_s: float = 30.0):
        self.mode, self.hang_s, self.requests, self.answers = mode, hang_s, [], []

    async def __call__(self, context, params):
        self.requests.append(params)
        if self.mode == "refuse":
            return ErrorData(code=-1, message="User rejected sampling request")
        if self.mode == "hang":
            await anyio.sleep(self.hang_s)
        text = params.messages[0].content.text
        if self.mode == "garbage":
            answer = "Sure! Here are the memories: Ben has a dog."
        elif self.mode == "flood":
            answer = flood(text)
        else:
            sessions = re.findall(r"^SESSION (S[0-9a-f]+) ", text, re.M)
            turns = {s: re.findall(rf'"turn": "({s}\.t\d+)"', text) for s in sessions}
            answer = json.dumps({"sessions": [{
                "session": s,
                "episodes": [{"title": "Ben adopts Biscuit", "summary": "Ben adopted a beagle.",
                              "details": "On Saturday, 6 May 2023 Ben adopted Biscuit, a beagle.",
                              "timestamp": "2023-05-06", "turn_refs": turns[s][:2]}],
                "tuples": [{"subject": "Ben", "relation": "adopted", "object": "a beagle named Biscuit",
                            "timestamp": "2023-05-06", "context": "Ben told Ana",
                            "turn_refs": turns[s][:1]},
                           {"subject": "Ana", "relation": "lives in", "object": "Lisbon",
                            "timestamp": "2023-05-08", "context": "", "turn_refs": ["S0.t9"]}],
                "claims": [{"turn": t, "text": c, "subject": who, "state": state}
                           for t, (c, who, state) in zip(
                               [turns[s][0], turns[s][-1], "S0.t9"],
                               [("Ben adopted a beagle named Biscuit on 6 May 2023.", "Ben", ""),
                                ("Ana lives in Lisbon.", "Ana", "residence"),
                                ("An invented claim.", "Ana", "")])]}
                for s in sessions],
                "merges": [{"merge": m, "text": "Merged by the host model."}
                           for m in re.findall(r"^MERGE (M[0-9a-f]+)$", text, re.M)]})
        self.answers.append(answer)
        return CreateMessageResult(role="assistant", model="scripted-model",
                                   content=TextContent(type="text", text=answer))


def flood(text: str) -> str:
    """An answer at the bounds of ``llm_schema.HostOut``: for each session shown, 100 episodes,
    400 tuples and 600 claims, each citing a shown turn."""
    from ..strategies.hybrid.llm_schema import HostOut, SessionOut

    def most(model, field: str) -> int:
        return next(m.max_length for m in model.model_fields[field].metadata
                    if hasattr(m, "max_length"))

    sessions = re.findall(r"^SESSION (S[0-9a-f]+) ", text, re.M)[:most(HostOut, "sessions")]
    out = []
    for s in sessions:
        turns = re.findall(rf'"turn": "({s}\.t\d+)"', text)
        out.append({
            "session": s,
            "episodes": [{"title": f"Event {k}", "summary": f"Something happened, number {k}.",
                          "timestamp": "2023-05-06", "turn_refs": [turns[k % len(turns)]]}
                         for k in range(most(SessionOut, "episodes"))],
            "tuples": [{"subject": f"Person {k}", "relation": "owns", "object": f"thing {k}",
                        "timestamp": "2023-05-06", "turn_refs": [turns[k % len(turns)]]}
                       for k in range(most(SessionOut, "tuples"))],
            "claims": [{"turn": turns[k % len(turns)], "text": f"Person {k} owns thing {k}.",
                        "subject": f"Person {k}"} for k in range(most(SessionOut, "claims"))]})
    return json.dumps({"sessions": out, "merges": []})


def block(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text}\n```"


def rows_of(space) -> list[dict]:
    out = []
    for k in ("episode", "fact"):
        for m in space.memories.of_kind(k):
            out.append({"kind": k, "origin": m.origin, "written_by": m.body.get("written_by"),
                        "text": m.text, "refs": m.refs})
    return out


async def demo(home: str) -> str:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    from ..server.app import build_server
    from ..server.settings import Settings

    out: list[str] = []
    say = out.append

    def server(sub: str, **kw):
        return build_server(Settings(home=str(Path(home) / sub), **kw))

    # 1. prompts
    async with Client(server("prompts")) as c:
        listed = (await c.list_prompts()).prompts
        say("## 1. The prompts, as a host lists them (`prompts/list`)\n")
        say(block(json.dumps([p.model_dump(mode="json", exclude_none=True) for p in listed],
                             indent=1), "json"))
        for name, args in (("curate_conversation", {"namespace": "default", "session_id": "chat-7"}),
                           ("use_memory", {})):
            got = await c.get_prompt(name, args)
            say(f"\n`prompts/get` {name} {json.dumps(args)}:\n")
            say(block(text_of(got.messages[0].content)))

    # 2. one curation through sampling (stateless 2026-07-28 protocol)
    host = ScriptedHost("good")
    srv = server("sampling")
    async with Client(srv, sampling_callback=host) as c:
        await c.call_tool("remember", {"messages": CONVERSATION, "session_id": "s1",
                                       "session_time": "2023-05-08T10:00:00"})
        srv.runtime.curation.wait_idle(120)
        space = srv.runtime.space("default")
        before = rows_of(space)
        offered = await c.call_tool("consolidate", {})
        assert not host.requests      # 2026-07-28: only asked with use_my_model=true
        res = await c.call_tool("consolidate", {"use_my_model": True})
        (req,) = host.requests
        say("\n## 2. One curation through sampling (`consolidate`, protocol 2026-07-28)\n")
        say(f"Without `use_my_model` (the default on this protocol): {text_of(offered.content[0])}\n")
        say("Stored before (background heuristics):\n")
        say(block(json.dumps(before, indent=1), "json"))
        say("\nThe `sampling/createMessage` request the server sent (inside an InputRequiredResult):\n")
        say(block(json.dumps(req.model_dump(mode="json", exclude_none=True), indent=1), "json"))
        say("\nThe host's answer (scripted model `scripted-model`):\n")
        say(block(host.answers[0], "json"))
        say(f"\nThe tool's text: {text_of(res.content[0])}\n\nhost_model: "
            f"`{json.dumps(res.structured_content['host_model'])}`\n\nStored after:\n")
        after = rows_of(space)
        say(block(json.dumps(after, indent=1), "json"))
        fid = next(m.id for m in space.memories.of_kind("fact"))
        exp = await c.call_tool("explain", {"id": fid})
        say(f"\n`explain` of a fact: {exp.structured_content['summary']}\n")
        claims = space.derived.rows("wiki_claims", columns=["id", "text", "subject", "slot", "ref"])
        say("\nThe wiki's claims after (the host's, and the sentence claims of an exchange it "
            "gave none for):\n")
        say(block(json.dumps(sorted(claims, key=lambda c: c["ref"]), indent=1), "json"))
        cid = next(c["id"] for c in claims if c["subject"] == "Ana")
        exp = await c.call_tool("explain", {"id": cid})
        say(f"\n`explain` of a claim: {exp.structured_content['summary']}\n")

    # 3. what a merge writes
    host = ScriptedHost("good")
    srv = server("merge")
    async with Client(srv, mode="legacy", sampling_callback=host) as c:
        for sid, when, obj, other in [
                ("a", "2023-01-10T10:00:00", "a beagle puppy named Biscuit. Biscuit was eight weeks old",
                 "Ana plays the violin in a small orchestra"),
                ("b", "2023-03-10T10:00:00", "a beagle puppy named Biscuit from the animal shelter",
                 "Ana grows tomatoes on her balcony")]:
            facts = [{"subject": "Ben", "relation": "adopted", "object": obj, "refs": [f"{sid}1"]},
                     {"subject": "Ana", "relation": other.split()[1],
                      "object": other.split(" ", 2)[2], "refs": [f"{sid}2"]}]
            await c.call_tool("remember", {"messages": [
                {"content": obj, "speaker": "Ben", "ref": f"{sid}1"},
                {"content": other, "speaker": "Ana", "ref": f"{sid}2"}], "session_id": sid,
                "session_time": when, "curated": {"facts": facts}})
        srv.runtime.curation.wait_idle(120)
        res = await c.call_tool("consolidate", {"min_cluster_size": 2})
        merges = [o for o in res.structured_content["operations"] if o.get("op") == "merge"]
        space = srv.runtime.space("default")
        say("\n## 3. What a merge writes\n")
        for op in merges:
            texts = [m.text for m in space.memories.get(op["ids"])]
            (keep,) = space.memories.get([op["into"]])
            say(block(json.dumps({"absorbed": texts, "survivor_before": keep.lineage["text_before"],
                                  "merged_text": keep.text, "merged_text_by":
                                  keep.body["merged_text_by"]}, indent=1), "json"))
        res = await c.call_tool("consolidate", {"min_cluster_size": 2})
        for op in merges:
            (keep,) = space.memories.get([op["into"]])
            say("\nAt the next `consolidate` the host's model rewrites it:\n")
            say(block(json.dumps({"merged_text": keep.text, "merged_text_by":
                                  keep.body["merged_text_by"]}, indent=1), "json"))

    # 4. hosts that decline, answer garbage, or never answer
    say("\n## 4. A host that declines, answers garbage, or never answers\n")
    say("(on 2026-07-28 `consolidate` is called with `use_my_model: true`; without it the "
        "model is not asked there)\n")
    say("| host | protocol | consolidate | host_model | rows before → after (origin) | sources |")
    say("|---|---|---|---|---|---|")
    for mode, proto in (("refuse", "legacy"), ("refuse", "auto"), ("garbage", "auto"),
                        ("garbage", "legacy"), ("hang", "legacy")):
        host = ScriptedHost(mode, hang_s=30)
        srv = server(f"{mode}-{proto}", sampling_timeout_s=2)
        async with Client(srv, mode=proto, sampling_callback=host) as c:
            await c.call_tool("remember", {"messages": CONVERSATION, "session_id": "s1"})
            srv.runtime.curation.wait_idle(120)
            space = srv.runtime.space("default")
            b = rows_of(space)
            try:
                res = await c.call_tool("consolidate", {} if proto == "legacy" else
                                        {"use_my_model": True})
                status, hm = "ok", json.dumps(res.structured_content["host_model"])
            except MCPError as exc:
                status, hm = f"client raised MCPError: {exc}", "-"
            a = rows_of(space)
            say(f"| {mode} | {proto} | {status} | `{hm}` | {len(b)} → {len(a)} "
                f"({', '.join(sorted({r['origin'] for r in a}))}) | "
                f"{len(space.sources.by_session('s1'))} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trimem-sampling-") as home:
        text = anyio.run(demo, home)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
