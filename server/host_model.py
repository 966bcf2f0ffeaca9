"""The host's own model as curator, through MCP sampling, inside a ``consolidate`` call.

Sampling only exists inside a request, and ``consolidate`` is the one tool whose work can wait
for a model: ``remember`` and ``recall`` never sample. When ``TRIMEM_LLM`` is ``sampling`` or
``auto`` (the default) and the client declared the sampling capability, the ``consolidate``
tool's parameter ``host`` is resolved by :func:`ask_host` (the SDK's ``Resolve`` / ``Sample``
pattern). One request asks for, in one JSON answer (``llm_schema.HostOut``):

* the curation of up to ``SESSIONS_PER_CALL`` sessions (``TURNS_PER_CALL`` turns in all) that
  only the heuristics curated so far: episodes and relational tuples per the paper's prompts;
* the wiki's claims of those sessions (``llm_schema.ClaimOut``, stored by
  ``strategies/wiki/sampled.py``);
* the text of up to ``MERGES_PER_CALL`` merges that a consolidation wrote with the heuristic
  merge of texts (``merged_text_by == "heuristic"``).

Transports: on 2026-07-28 the ``Sample`` marker travels in an ``InputRequiredResult`` and the
client retries with the answer (the server waits for nothing). There a declined request ends
the whole call in the client, and the server never hears of it, so the model is asked only when
the caller passes ``use_my_model=true``; by default the call runs without it and says so. On
2025-11-25 the request goes over the back-channel here (by default), bounded by
``TRIMEM_SAMPLING_TIMEOUT_S``; a refusal, an error or a timeout there leaves ``consolidate`` to
run without it. Either way ``consolidate`` then curates, with the heuristics, every session
still queued, so a declining host never leaves a session uncurated. Whatever the answer is, it is validated
(``llm_schema.parse``, then only sessions and turns that were shown, with unchanged turns, and no
more items than the session's size allows: ``strategies/model_bounds.py``; ``dropped`` in the
report counts the answer's episodes, tuples and claims not stored);
anything else keeps the heuristic memories: no session loses anything. A client without the
capability is never asked. The answer's model name is recorded as ``written_by``
(``sampling:<model>``) on every row it wrote. What to ask and how an answer is stored (the part
that knows the strategies' stores) is ``tools/host_curation.py``; this module is the MCP side.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.resolve import Resolve, Sample
from mcp.shared.message import ServerMessageMetadata
from mcp.types import CreateMessageRequest, CreateMessageResult, SamplingMessage, TextContent
from pydantic import BaseModel

from ..tools.host_curation import SYSTEM, HostJob, digest, plan_job, store_answer

if TYPE_CHECKING:
    from ..tools.runtime import Runtime

log = logging.getLogger(__name__)
MAX_TOKENS = 8_000
MODERN = "2026-07-28"


class HostSkip(BaseModel):
    """The host's model was not asked or gave nothing usable; ``why`` says which."""

    why: str


class HostAnswer(BaseModel):
    """An answer received over the 2025-11-25 back-channel, with a digest of what was asked
    (the store may change while the host's model thinks: a changed question is not applied)."""

    result: CreateMessageResult
    asked: str


def sample_of(job: HostJob) -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=job.prompt))],
                  max_tokens=MAX_TOKENS, system_prompt=SYSTEM, temperature=0.0)


OPT_IN = ("not asked: on protocol 2026-07-28 a declined request ends the whole call, so your "
          "model is asked only when you call consolidate with use_my_model=true")


async def ask_host(ctx: Context, namespace: str, dry_run: bool,
                   use_my_model: bool | None) -> Sample | HostAnswer | HostSkip:
    """Resolver of ``consolidate``'s ``host`` parameter (see the module docstring)."""
    # build_server sets ``runtime`` on the server; the SDK's MCPServer does not declare it
    rt: Runtime = ctx.mcp_server.runtime  # pyright: ignore[reportAttributeAccessIssue]
    mode = rt.config.llm
    if mode not in ("sampling", "auto"):
        return HostSkip(why=f"TRIMEM_LLM={mode}")
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        return HostSkip(why="the client does not offer sampling")
    if dry_run:
        return HostSkip(why="dry run")
    if use_my_model is False:
        return HostSkip(why="use_my_model=false")
    modern = (ctx.protocol_version or "") >= MODERN
    if modern and use_my_model is None:
        # the client ends the call itself when its host declines (the server never hears of
        # it): by default a call must succeed, so the host's model is only offered here
        job = await anyio.to_thread.run_sync(lambda: _planned(rt, namespace))
        return HostSkip(why=OPT_IN if job else "nothing for the host's model to write")
    try:
        job = await anyio.to_thread.run_sync(lambda: plan_job(rt, namespace))
    except Exception as exc:   # e.g. an unknown namespace: the tool body reports it
        return HostSkip(why=f"nothing to ask ({type(exc).__name__})")
    if job is None:
        return HostSkip(why="nothing for the host's model to write")
    sample = sample_of(job)
    if modern:
        return sample              # InputRequiredResult: the client answers and retries
    timeout = rt.config.sampling_timeout_s
    try:
        with anyio.fail_after(timeout):
            result = await ctx.session.send_request(
                CreateMessageRequest(params=sample.params), CreateMessageResult,
                request_read_timeout_seconds=timeout,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
        return HostAnswer(result=result, asked=digest(job.prompt))
    except TimeoutError:
        return HostSkip(why=f"the host's model did not answer within {timeout:g} s")
    except Exception as exc:   # a refusal (MCPError), a malformed result, a closed channel
        return HostSkip(why=f"the host declined or failed: {str(exc)[:200]}")


def _planned(rt, namespace: str) -> bool:
    try:
        return plan_job(rt, namespace) is not None
    except Exception:
        return False


HOST = Annotated[CreateMessageResult | HostAnswer | HostSkip, Resolve(ask_host)]


def apply_answer(rt, namespace: str, host: Any) -> dict:
    """Store what a valid answer wrote; report what happened (also when nothing was used)."""
    if isinstance(host, HostSkip):
        return {"used": False, "why": host.why}
    asked = None
    if isinstance(host, HostAnswer):
        host, asked = host.result, host.asked
    if not isinstance(host, CreateMessageResult):
        return {"used": False, "why": "no answer"}
    # the client names its model: a stored, hostile string; only a plain name is kept
    model = re.sub(r"[^A-Za-z0-9._:/@+-]", "_", str(host.model or "unknown"))[:120]
    by = f"sampling:{model}"
    content = host.content if isinstance(host.content, list) else [host.content]
    text = "".join(c.text for c in content if isinstance(c, TextContent))
    return store_answer(rt, namespace, text, by, asked)
