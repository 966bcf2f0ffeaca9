"""The ``consolidate`` tool: offline upkeep of a namespace's memory.

Every strategy with a ``consolidate`` hook clusters / merges / supersedes its own memories
(never destroying: superseded rows keep their lineage); then storage upkeep folds new rows into
the full-text and vector indexes, builds the vector index once a table is large enough and
compacts fragments. ``dry_run`` only plans: nothing on disk changes.

:func:`run_consolidation` is the one implementation: the tool and the ``trimem consolidate``
command run it in a worker thread (:func:`consolidate`), and the curation worker runs it every
N sessions when ``TRIMEM_CONSOLIDATE_EVERY_SESSIONS`` is set (``tools/periodic.py``).
"""

from __future__ import annotations

import time
from typing import Annotated, Any, TYPE_CHECKING, cast

from pydantic import BaseModel, Field
import anyio.from_thread
import anyio.to_thread

from .answer import doc, quoted
from .errors import ToolFailure
from .namespaces import require
from .params import Bool, Int
from .runtime import Runtime
from ..strategies import registry
from ..strategies.base import Consolidates, StrategyFailure

if TYPE_CHECKING:
    from ..storage.space import Space


class ConsolidateResult(BaseModel):
    """``compression_ratio`` = active memories after / before (rows are never deleted: merged
    and superseded ones stay, with lineage); without consolidating strategies, rows after/before."""

    namespace: str
    dry_run: bool = Field(description="True: only the plan; nothing changed.")
    before: dict[str, int] = Field(description="Rows per memory table (and active memories per "
                                               "strategy) before.")
    after: dict[str, int] = Field(description="The same counts after.")
    compression_ratio: float = Field(description="Active memories after / before.")
    clusters: int = Field(description="Clusters of similar memories found.")
    operations: list[dict[str, Any]] = Field(description="Every merge, supersede and upkeep step.")
    duration_s: float
    host_model: dict[str, Any] | None = Field(default=None, description="What the host's model wrote "
                                              "through sampling (sessions, merge texts, "
                                              "written_by, items of its answer dropped), or "
                                              "why it was not used.")


LOGS = ("audit", "recalls")


def memory_counts(space: Space) -> dict[str, int]:
    """Rows of the memory tables (sources, derived memories); logs are not memory."""
    return {k: n for k, n in space.stats().items() if not k.startswith(LOGS)}


def plan(space: Space) -> list[dict[str, Any]]:
    ops = [{"op": "optimize", "table": t, "why": "compact fragments, fold new rows into indexes"}
           for t in space.stats()]
    tbl = space.table("sources")
    if tbl is not None and not space.upkeep.has_vector_index(tbl) and \
            tbl.count_rows() >= space.store.vector_index_min_rows:
        ops.append({"op": "build_vector_index", "table": "sources",
                    "why": f"{tbl.count_rows()} rows: an HNSW index beats a flat scan"})
    return ops


def run_consolidation(rt: Runtime, namespace: str = "default", dry_run: bool = False,
                      min_cluster_size: int = 10, progress=None,
                      trigger: str = "request") -> ConsolidateResult:
    """The whole consolidation of one namespace, synchronously, under its namespace lock.

    Each consolidating strategy first, then storage upkeep. ``progress(done, total, message)``
    is a plain callable (or None). ``trigger`` says who asked ("request": the tool or the CLI;
    periodic runs name their setting) and is recorded in the audit entry. Holding the namespace's
    curation turn (``Runtime.curating``) keeps curation in any process and ``forget`` in this one
    out while memories are merged. Counts
    are of memory rows (sources and derived memories), not logs.
    """
    if isinstance(min_cluster_size, bool) or not isinstance(min_cluster_size, int) or min_cluster_size < 2:
        raise ToolFailure("min_cluster_size must be a whole number ≥ 2")
    ns = require(rt, namespace)
    report = progress if progress is not None else (lambda done, total, message: None)
    with rt.curating(ns, writes=not dry_run):
        t0 = time.perf_counter()
        env = rt.env(ns)
        space = env.space
        before = memory_counts(space)
        ops: list[dict[str, Any]] = []
        clusters = 0
        active, extra_after = [0, 0], {}
        for strat in registry.with_hook(Consolidates):
            try:
                out = strat.consolidate(env, dry_run, min_cluster_size, report)
            except StrategyFailure as exc:
                raise ToolFailure(f"{strat.name} consolidation stopped before writing anything: "
                                  f"{exc}") from exc
            clusters += int(out.get("clusters", 0))
            ops += [dict(op, strategy=strat.name) for op in out.get("operations", [])]
            if "active_before" in out:   # non-destructive: compression is of the *active* memories
                active[0] += int(out["active_before"])
                active[1] += int(out["active_after"])
                before[f"{strat.name}.active"] = int(out["active_before"])
                extra_after[f"{strat.name}.active"] = int(out["active_after"])
        upkeep = plan(space)
        ops += upkeep
        if not dry_run:
            for k, op in enumerate(upkeep):
                report(k, len(upkeep), f"{op['op']} {op['table']}")
                if op["op"] == "build_vector_index":
                    op["done"] = space.upkeep.build_vector_index("sources")
                else:
                    space.upkeep.optimize_table(op["table"])
                    op["done"] = True
            space.log.audit("consolidate", [], {"operations": ops, "min_cluster_size": min_cluster_size,
                                            "trigger": trigger})
            report(len(upkeep), len(upkeep), "done")
        after = dict(before) if dry_run else memory_counts(space)
    after.update(extra_after)
    if active[0]:
        ratio = active[1] / active[0]
    else:
        ratio = sum(after.values()) / (sum(before.values()) or 1)
    return ConsolidateResult(namespace=ns, dry_run=dry_run, before=before, after=after,
                             compression_ratio=round(ratio, 4),
                             clusters=clusters, operations=ops,
                             duration_s=round(time.perf_counter() - t0, 3))


async def consolidate(rt: Runtime, namespace: str = "default", dry_run: bool = False,
                      min_cluster_size: int = 10, progress=None) -> ConsolidateResult:
    """:func:`run_consolidation` in a worker thread; ``progress`` is an async callable
    ``(done, total, message)`` (the MCP context's ``report_progress``), relayed from the thread."""
    def relay(done, total, message):
        if progress is not None:
            anyio.from_thread.run(progress, done, total, message)

    return await anyio.to_thread.run_sync(
        lambda: run_consolidation(rt, namespace, dry_run, min_cluster_size,
                                  relay if progress is not None else None))


def text_of(out: ConsolidateResult) -> str:
    ops: dict[str, int] = {}
    for op in out.operations:
        ops[str(op.get("op"))] = ops.get(str(op.get("op")), 0) + 1
    steps = ", ".join(f"{n} {k}" for k, n in sorted(ops.items())) or "nothing to do"
    verb = "Planned (dry run, nothing changed)" if out.dry_run else "Consolidated"
    host = out.host_model or {}
    by = ""
    if host.get("used"):
        by = (f" Your model ({quoted(host['written_by'])}) curated {len(host['sessions'])} "
              f"session(s), wrote the wiki claims of {len(host.get('wiki_claims') or {})} and "
              f"{host['merges']} merge text(s).")
    elif host.get("why"):
        by = f" Your model was not used ({host['why']})."
    if host.get("curated_by_heuristics"):
        by += (f" {len(host['curated_by_heuristics'])} queued session(s) were curated by "
               "heuristics.")
    return (f"{verb} namespace {quoted(out.namespace)}: {out.clusters} cluster(s); {steps}; "
            f"active memories after/before {out.compression_ratio:g}; {out.duration_s:g} s.{by}")


DRY_RUN = Annotated[Bool, Field(description="true: return the plan only; nothing on disk changes.")]
USE_MY_MODEL = Annotated[Bool | None, Field(
    description="Ask your model (MCP sampling) to curate sessions and write merge texts in this "
                "call. Default: yes where declining cannot fail the call (protocol 2025-11-25: "
                "a refusal or no answer in time just leaves the heuristics); no on 2026-07-28, "
                "where a declined request ends the call (nothing is lost): pass true there.")]
MIN_CLUSTER = Annotated[Int, Field(description="Fewest similar memories that form a cluster to "
                                               "merge (at least 2).", examples=[10])]

DESCRIPTION = doc("""
    Tidy a namespace's long-term memory offline (now and then, not every turn).

    Clusters similar memories, merges and supersedes them (never destroying: merged ones keep
    their history and can be restored), folds new rows into the search indexes and compacts
    storage. `dry_run` returns the plan without changing anything. Reports progress while it
    runs. If this client offers sampling (and TRIMEM_LLM is auto or sampling), it first asks
    your model, in one request, to curate up to 3 sessions that only heuristics curated (their
    episodes, facts and wiki claims) and to write the text of pending merges; answer with the
    JSON object asked for. Declining, a bad answer or no answer changes nothing: the heuristic
    memories stay, and sessions still queued are curated by heuristics in this call. On
    protocol 2026-07-28 it asks only with `use_my_model: true` (there, declining ends the call).
    """)


def curate_queued(rt: Runtime, namespace: str) -> list[str]:
    """Curate (every strategy, heuristics unless the host's model wrote the session) each session
    of ``namespace`` still queued; their ids."""
    ns = require(rt, namespace)
    queued = sorted(s.session_id for s in rt.space(ns).sessions.all() if s.curation == "queued")
    for sid in queued:
        rt.curation.curate_now(ns, sid)
    return queued


def restore(rt: Runtime, namespace: str, memory_id: str) -> dict:
    """Make a merged or superseded hybrid memory active again (``trimem restore``), under the
    namespace lock like curation and forget; what changed, or a :class:`ToolFailure` saying why
    ``memory_id`` cannot be restored."""
    from ..strategies.hybrid.store import KINDS  # lazy: numpy (hybrid store), not at start-up
    from ..strategies.hybrid.strategy import HybridStrategy  # lazy: numpy (hybrid store), not at start-up

    if namespace not in rt.store.namespaces():
        raise ToolFailure(f"no namespace {namespace!r} in {rt.config.home} "
                          "(`trimem namespaces` lists them)")
    env = rt.env(namespace)
    found = env.space.memories.get([memory_id])
    if not found:
        what = "a raw message, not a memory" if env.space.sources.get([memory_id]) else "unknown"
        raise ToolFailure(f"{memory_id!r} is {what} in namespace {namespace!r}; give the id of "
                          "an episode or fact that consolidation merged or superseded "
                          "(`explain` on the survivor lists them)")
    mem = found[0]
    if mem.kind not in KINDS:
        raise ToolFailure(f"{memory_id!r} is a {mem.kind}; only hybrid episodes and facts "
                          "can be restored")
    if mem.status not in ("merged", "superseded"):
        raise ToolFailure(f"{memory_id!r} is {mem.status}: only a merged or superseded "
                          "memory can be restored")
    with rt.curating(namespace):
        out = cast(HybridStrategy, registry.get("hybrid")).restore(env, memory_id)
    return {"namespace": namespace, "kind": mem.kind, "text": mem.text, **out}
