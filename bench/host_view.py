"""What a host's model reads, measured through the real MCP client over stdio.

    python -m trimem.bench.host_view --home STORE --namespace conv-26 \
        --data ../shared/data/locomo --questions 20 --listing tools-listing.json

Starts ``trimem serve`` from the repository's ``mcp.json`` entry (with TRIMEM_HOME=STORE, a
store built by ``bench/locomo.py --home STORE``), lists the tools (optionally saving the listing
as a host sees it: names, descriptions, input schemas, annotations), then asks the namespace's
first N benchmark questions under ``auto`` at each budget and reports the characters of all text
content blocks / 4 against the budget, and the length of ``explain(recall_id)``'s text (pages).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

ROOT = Path(__file__).resolve().parents[1]


def text_of(block) -> str:
    """The text of a content block that must be text (every trimem tool answers in text)."""
    assert isinstance(block, TextContent), block
    return block.text


def params(home: str, env_extra: dict) -> StdioServerParameters:
    entry = next(iter(json.loads((ROOT / "mcp.json").read_text())["mcpServers"].values()))
    env = dict(os.environ, **(entry.get("env") or {}), TRIMEM_HOME=home, **env_extra)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return StdioServerParameters(command=entry["command"], args=entry["args"], env=env)


def text_chars(res) -> int:
    return sum(len(c.text) for c in res.content if c.type == "text")


async def measure(args) -> dict:
    from .locomo import CATS, load

    raw = dict(load(Path(args.data), args.namespace.replace("conv-", "")))[args.namespace]
    questions = [q["question"] for q in raw["qa"] if q.get("category") in CATS][:args.questions]
    extra = {"TRIMEM_CURATION": "false"} if args.no_curation else {}
    out: dict = {"namespace": args.namespace, "questions": len(questions), "budgets": {}}
    async with Client(params(args.home, extra), read_timeout_seconds=300) as c:
        tools = (await c.list_tools()).tools
        if args.listing:
            Path(args.listing).write_text(json.dumps(
                [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools],
                indent=1, ensure_ascii=False))
        explain_pages, explain_max = [], 0
        for budget in [int(b) for b in args.budgets.split(",")]:
            worst, over = 0.0, 0
            for q in questions:
                res = await c.call_tool("recall", {"query": q, "namespace": args.namespace,
                                                   "budget_tokens": budget})
                assert not res.is_error, res.content
                tokens = text_chars(res) / 4
                worst = max(worst, tokens)
                over += tokens > budget + 64
            rid = res.structured_content["recall_id"]
            page, n = 1, 0 if args.skip_explain else 1
            while page <= n:
                exp = await c.call_tool("explain", {"id": rid, "namespace": args.namespace,
                                                    "page": page})
                assert not exp.is_error, exp.content
                explain_max = max(explain_max, text_chars(exp))
                head = text_of(exp.content[0]).split("\n", 1)[0]
                n = int(head.split(" of ")[1].split(";")[0].rstrip("]"))
                page += 1
            explain_pages.append(n)
            out["budgets"][budget] = {"max_text_tokens": round(worst, 1), "over_budget_plus_64": over}
        out["explain"] = {"max_page_chars": explain_max, "max_page_tokens": -(-explain_max // 4),
                          "pages_of_last_recall_per_budget": explain_pages}
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--namespace", default="conv-26")
    ap.add_argument("--data", default="../shared/data/locomo")
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--budgets", default="250,1000,2000,4000")
    ap.add_argument("--listing", default="", help="save the tools listing (JSON) here")
    ap.add_argument("--no-curation", action="store_true",
                    help="TRIMEM_CURATION=false for the server (the store is being built elsewhere)")
    ap.add_argument("--skip-explain", action="store_true",
                    help="recall only (for a server without explain paging)")
    args = ap.parse_args(argv)
    out = anyio.run(measure, args)
    print(json.dumps(out, indent=1))
    print("| budget | max text tokens (all text blocks / 4) | recalls over budget + 64 |\n|---|---|---|")
    for b, r in out["budgets"].items():
        print(f"| {b} | {r['max_text_tokens']} | {r['over_budget_plus_64']} |")


if __name__ == "__main__":
    main()
