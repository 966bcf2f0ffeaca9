"""The ``consolidate`` tool: offline upkeep of a namespace's memory.

Every strategy with a ``consolidate`` hook clusters / merges / supersedes its own memories
(never destroying: superseded rows keep their lineage); then storage upkeep folds new rows into
the full-text and vector indexes, builds the vector index once a table is large enough and
compacts fragments. ``dry_run`` only plans: nothing on disk changes.
"""

from __future__ import annotations

import time
from typing import Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel

from . import validate as v
from .errors import guard
from .runtime import Runtime


class ConsolidateResult(BaseModel):
    """``compression_ratio`` = active memories after / before (rows are never deleted: merged
    and superseded ones stay, with lineage); without consolidating strategies, rows after/before."""

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
    """Each consolidating strategy first (in a worker thread, progress relayed to the client),
    then storage upkeep. Counts are of memory rows (sources and derived memories), not logs."""
    import anyio.from_thread
    import anyio.to_thread

    from ..strategies import registry

    ns = v.namespace(namespace, rt.limits)
    if isinstance(min_cluster_size, bool) or not isinstance(min_cluster_size, int) or min_cluster_size < 2:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("min_cluster_size must be a whole number ≥ 2")
    t0 = time.perf_counter()
    env = await anyio.to_thread.run_sync(rt.env, ns)
    space = env.space
    before = await anyio.to_thread.run_sync(memory_counts, space)
    ops: list[dict[str, Any]] = []
    clusters = 0
    active, extra_after = [0, 0], {}

    def relay(done, total, message):
        if progress is not None:
            anyio.from_thread.run(progress, done, total, message)

    for strat in await anyio.to_thread.run_sync(registry.with_hook, "consolidate"):
        out = await anyio.to_thread.run_sync(
            lambda: strat.consolidate(env, dry_run, min_cluster_size, relay))
        clusters += int(out.get("clusters", 0))
        ops += [dict(op, strategy=strat.name) for op in out.get("operations", [])]
        if "active_before" in out:   # non-destructive: compression is of the *active* memories
            active[0] += int(out["active_before"])
            active[1] += int(out["active_after"])
            before[f"{strat.name}.active"] = int(out["active_before"])
            extra_after[f"{strat.name}.active"] = int(out["active_after"])
    upkeep = await anyio.to_thread.run_sync(plan, space)
    ops += upkeep
    if not dry_run:
        for k, op in enumerate(upkeep):
            if progress is not None:
                await progress(k, len(upkeep), f"{op['op']} {op['table']}")
            if op["op"] == "build_vector_index":
                op["done"] = await anyio.to_thread.run_sync(space.build_vector_index, "sources")
            else:
                await anyio.to_thread.run_sync(space.optimize_table, op["table"])
                op["done"] = True
        await anyio.to_thread.run_sync(space.audit, "consolidate", [],
                                       {"operations": ops, "min_cluster_size": min_cluster_size})
        if progress is not None:
            await progress(len(upkeep), len(upkeep), "done")
    after = dict(before) if dry_run else await anyio.to_thread.run_sync(memory_counts, space)
    after.update(extra_after)
    if active[0]:
        ratio = active[1] / active[0]
    else:
        ratio = sum(after.values()) / (sum(before.values()) or 1)
    return ConsolidateResult(namespace=ns, dry_run=dry_run, before=before, after=after,
                             compression_ratio=round(ratio, 4),
                             clusters=clusters, operations=ops,
                             duration_s=round(time.perf_counter() - t0, 3))


def register(server, rt: Runtime) -> None:
    @server.tool(name="consolidate")
    @guard(rt)
    async def consolidate_tool(ctx: Context, namespace: str = "default", dry_run: bool = False,
                               min_cluster_size: int = 10) -> ConsolidateResult:
        """Tidy a namespace's long-term memory offline (run it now and then, not every turn).

        Folds new memories into the search indexes and compacts storage; nothing is destroyed.
        `dry_run` returns the plan without changing anything. Reports progress while it runs.
        """
        return await consolidate(rt, namespace, dry_run, min_cluster_size,
                                 progress=ctx.report_progress)
