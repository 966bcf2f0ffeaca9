"""The ``consolidate`` tool: offline upkeep of a namespace's memory.

In this version the strategies that cluster and merge memories (hybrid, wiki) are not yet
registered, so consolidation is storage upkeep: fold new rows into the full-text and vector
indexes, build the vector index once a table is large enough, compact fragments. It reports
what it did and never destroys anything. ``dry_run`` only plans.
"""

from __future__ import annotations

import time
from typing import Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from . import validate as v
from .runtime import Runtime


class ConsolidateResult(BaseModel):
    namespace: str
    dry_run: bool
    before: dict[str, int]
    after: dict[str, int]
    compression_ratio: float
    clusters: int
    operations: list[dict[str, Any]]
    duration_s: float


LOGS = ("audit", "recalls")


def memory_counts(space) -> dict[str, int]:
    """Rows of the memory tables (sources, derived memories); logs are not memory."""
    return {k: n for k, n in space.stats().items() if not k.startswith(LOGS)}


def plan(space) -> list[dict[str, Any]]:
    ops = [{"op": "optimize", "table": t, "why": "compact fragments, fold new rows into indexes"}
           for t in space.stats()]
    tbl = space.table("sources")
    if tbl is not None and not space.has_vector_index(tbl) and \
            tbl.count_rows() >= space.store.vector_index_min_rows:
        ops.append({"op": "build_vector_index", "table": "sources",
                    "why": f"{tbl.count_rows()} rows: an HNSW index beats a flat scan"})
    return ops


async def consolidate(rt: Runtime, namespace: str = "default", dry_run: bool = False,
                      min_cluster_size: int = 10, progress=None) -> ConsolidateResult:
    import anyio.to_thread

    ns = v.namespace(namespace, rt.limits)
    if isinstance(min_cluster_size, bool) or not isinstance(min_cluster_size, int) or min_cluster_size < 2:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("min_cluster_size must be a whole number ≥ 2")
    t0 = time.perf_counter()
    space = await anyio.to_thread.run_sync(rt.space, ns)
    before = await anyio.to_thread.run_sync(memory_counts, space)
    ops = await anyio.to_thread.run_sync(plan, space)
    if not dry_run:
        for k, op in enumerate(ops):
            if progress is not None:
                await progress(k, len(ops), f"{op['op']} {op['table']}")
            if op["op"] == "build_vector_index":
                op["done"] = await anyio.to_thread.run_sync(space.build_vector_index, "sources")
            else:
                await anyio.to_thread.run_sync(space.optimize_table, op["table"])
                op["done"] = True
        if ops:
            await anyio.to_thread.run_sync(space.audit, "consolidate", [],
                                           {"operations": ops, "min_cluster_size": min_cluster_size})
        if progress is not None:
            await progress(len(ops), len(ops), "done")
    after = before if dry_run else await anyio.to_thread.run_sync(memory_counts, space)
    n_before = sum(before.values()) or 1
    return ConsolidateResult(namespace=ns, dry_run=dry_run, before=before, after=after,
                             compression_ratio=round(sum(after.values()) / n_before, 4), clusters=0,
                             operations=ops, duration_s=round(time.perf_counter() - t0, 3))


def register(server, rt: Runtime) -> None:
    @server.tool(name="consolidate")
    async def consolidate_tool(ctx: Context, namespace: str = "default", dry_run: bool = False,
                               min_cluster_size: int = 10) -> ConsolidateResult:
        """Tidy a namespace's long-term memory offline (run it now and then, not every turn).

        Folds new memories into the search indexes and compacts storage; nothing is destroyed.
        `dry_run` returns the plan without changing anything. Reports progress while it runs.
        """
        return await consolidate(rt, namespace, dry_run, min_cluster_size,
                                 progress=ctx.report_progress)
