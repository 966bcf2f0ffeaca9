"""The five tools as MCP adapters over the service layer (``tools/``).

An adapter calls the service layer with the arguments the SDK parsed against the parameter
types declared beside it (``tools/<tool>.py``: descriptions, limits, result models), then hands
back :func:`answer` — short text for the model, the whole result as structured content. The
input checks and the work are the service layer's. Two adapters do more, because what they add
exists only in an MCP request:

* ``consolidate`` orchestrates a consolidation in three steps (none writes on a dry run):
  the host's own model, asked through MCP sampling by the ``host`` dependency
  (``server/host_model.py``), curates sessions that only the heuristics curated and rewrites
  heuristic merge texts, when the client can be asked; the heuristics then curate every session
  still queued (``tools.consolidate.curate_queued``); then ``tools.consolidate.consolidate``
  runs. The result's ``host_model`` says whether the host's model was used, or why not.
* ``explain`` checks ``page``, a parameter of the text it returns and not of the explanation.

Blocking service calls run in a worker thread (``anyio.to_thread``) in the async adapters.
:func:`guard` turns the service layer's anticipated failures (``tools.errors.ToolFailure``) and
fixable storage failures into the SDK's ``ToolError``, which the call returns as ``is_error``
with the message.

This module does not use ``from __future__ import annotations``: the parameter annotations are
evaluated where they are written (``rem.MESSAGES``), so the SDK reads the objects themselves.
"""

import contextlib
import functools
import inspect
from collections.abc import Iterator
from typing import Annotated

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from ..tools import consolidate as con
from ..tools import explain as exp
from ..tools import forget as fgt
from ..tools import recall as rec
from ..tools import remember as rem
from ..tools.errors import ToolFailure, translate
from ..tools.namespaces import require
from ..tools.params import NAMESPACE
from ..tools.progress import relay
from ..tools.runtime import Runtime
from .host_model import HOST, HostSkip, apply_answer


def answer(text: str, result: BaseModel) -> CallToolResult:
    """One text block for the model; the whole ``result`` as structured content.

    A host gives its model a tool result's *text content*; ``structured_content`` (validated
    against the tool's output schema) is for the host's own code. The SDK would otherwise put a
    pretty-printed JSON copy of the whole result in the text, so every recalled line would reach
    the model three times. Each tool annotates its return type as
    ``Annotated[CallToolResult, ResultModel]``, which keeps the output schema."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=result.model_dump(mode="json"))


def _as_tool_error(exc: Exception, home: str) -> ToolError | None:
    if isinstance(exc, ToolFailure):
        return ToolError(str(exc))
    if isinstance(exc, (OSError, RuntimeError)):
        known = translate(exc, home)
        return ToolError(str(known)) if known is not None else None
    return None


@contextlib.contextmanager
def _reported(home: str) -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        err = _as_tool_error(exc, home)
        if err is None:
            raise
        raise err from exc


def guard(rt: Runtime):
    """Wrap a tool function (sync or async): anticipated failures become ``ToolError``s."""
    home = rt.config.home

    def wrap(fn):
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def wrapper(*a, **kw):
                with _reported(home):
                    return await fn(*a, **kw)
            return wrapper

        @functools.wraps(fn)
        def sync_wrapper(*a, **kw):
            with _reported(home):
                return fn(*a, **kw)
        return sync_wrapper
    return wrap


def hints(title: str, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(title=title, read_only_hint=read_only, destructive_hint=destructive,
                           idempotent_hint=idempotent, open_world_hint=False)


def register(server, rt: Runtime) -> None:
    """remember, recall, consolidate, explain and forget, in that order."""

    @server.tool(name="remember", description=rem.DESCRIPTION,
                 annotations=hints("Remember messages", False, False, True))
    @guard(rt)
    async def remember_tool(ctx: Context, messages: rem.MESSAGES, session_id: rem.SESSION_ID = None,
                            session_time: rem.SESSION_TIME = None, namespace: NAMESPACE = "default",
                            curated: rem.CURATED = None
                            ) -> Annotated[CallToolResult, rem.RememberResult]:
        out = await anyio.to_thread.run_sync(lambda: rem.remember(
            rt, messages, session_id, session_time, namespace, curated,
            progress=relay(ctx.report_progress)))
        return answer(rem.text_of(out, len(messages), namespace), out)

    @server.tool(name="recall", description=rec.DESCRIPTION,
                 annotations=hints("Recall from memory", True, False, True))
    @guard(rt)
    def recall_tool(query: rec.QUERY, strategy: rec.STRATEGY = "auto",
                    namespace: NAMESPACE = "default", budget_tokens: rec.BUDGET = 2000,
                    since: rec.SINCE = None,
                    until: rec.UNTIL = None) -> Annotated[CallToolResult, rec.RecallResult]:
        out = rec.recall(rt, query, strategy, namespace, budget_tokens, since, until)
        return answer(rec.text_of(out, budget_tokens), out)

    @server.tool(name="consolidate", description=con.DESCRIPTION,
                 annotations=hints("Consolidate memory", False, False, False))
    @guard(rt)
    async def consolidate_tool(ctx: Context, namespace: NAMESPACE = "default",
                               dry_run: con.DRY_RUN = False,
                               min_cluster_size: con.MIN_CLUSTER = 10,
                               use_my_model: con.USE_MY_MODEL = None,
                               # always filled by the SDK (Resolve); the default only keeps
                               # the parameter order legal
                               host: HOST = None,  # pyright: ignore[reportArgumentType]
                               ) -> Annotated[CallToolResult, con.ConsolidateResult]:
        used = None
        if host is not None and not dry_run:    # the host's model first (server/host_model.py)
            require(rt, namespace)
            used = await anyio.to_thread.run_sync(lambda: apply_answer(rt, namespace, host))
        if isinstance(host, HostSkip):
            used = {"used": False, "why": host.why}
        if not dry_run:    # what is still queued is curated now, by the heuristics
            done = await anyio.to_thread.run_sync(lambda: con.curate_queued(rt, namespace))
            if done and used is not None:
                used["curated_by_heuristics"] = done
        out = await con.consolidate(rt, namespace, dry_run, min_cluster_size,
                                    progress=ctx.report_progress)
        out.host_model = used
        return answer(con.text_of(out), out)

    @server.tool(name="explain", description=exp.DESCRIPTION,
                 annotations=hints("Explain a memory or a recall", True, False, True))
    @guard(rt)
    def explain_tool(id: exp.ID, namespace: NAMESPACE = "default",
                     page: exp.PAGE = 1) -> Annotated[CallToolResult, exp.Explanation]:
        if isinstance(page, bool) or not isinstance(page, int) or page < 1:
            raise ToolError("page must be a whole number >= 1")
        out = exp.explain(rt, id, namespace)
        return answer(exp.text_of(out, page), out)

    @server.tool(name="forget", description=fgt.DESCRIPTION,
                 annotations=hints("Forget (delete for good)", False, True, True))
    @guard(rt)
    def forget_tool(ids: fgt.IDS = None, refs: fgt.REFS = None, session_id: fgt.SESSION_ID = None,
                    namespace: NAMESPACE = "default", recall_ids: fgt.RECALL_IDS = None,
                    recalls_before: fgt.RECALLS_BEFORE = None,
                    all_recalls: fgt.ALL_RECALLS = False) -> Annotated[CallToolResult, fgt.ForgetResult]:
        out = fgt.forget(rt, ids, refs, session_id, namespace, recall_ids, recalls_before,
                         all_recalls)
        return answer(fgt.text_of(out, namespace), out)
