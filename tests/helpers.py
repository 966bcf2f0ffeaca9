"""Small helpers for the tests (importable: tests/ is on pytest's pythonpath)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, ReadResourceResult, TextContent, TextResourceContents

if TYPE_CHECKING:
    from trimem.storage.rows import Session
    from trimem.storage.space import Space


def payload(res: CallToolResult) -> dict[str, Any]:
    """The structured result of a successful tool call."""
    assert not res.is_error, " ".join(getattr(c, "text", "") for c in res.content)
    assert res.structured_content is not None
    return res.structured_content


def error_text(res: CallToolResult) -> str:
    assert res.is_error, f"expected a tool error, got {res.structured_content}"
    return " ".join(getattr(c, "text", "") for c in res.content)


def text_of(res: CallToolResult) -> str:
    """The text a host's model reads: the result's one text block."""
    block = res.content[0]
    assert isinstance(block, TextContent), block
    return block.text


def resource_text(res: ReadResourceResult) -> str:
    """A resource's text (every trimem resource is text: JSON or Markdown)."""
    block = res.contents[0]
    assert isinstance(block, TextResourceContents), block
    return block.text


def session(space: Space, session_id: str) -> Session:
    """A stored session's row (it must exist)."""
    row = space.sessions.get(session_id)
    assert row is not None, f"no session {session_id!r}"
    return row


def turns(*texts: str, speaker: str = "Ana", prefix: str = "t") -> list[dict]:
    return [{"content": t, "speaker": speaker, "ref": f"{prefix}{i}"} for i, t in enumerate(texts, 1)]


# three small sessions the wiki tests curate (people, a move, a pet, a hobby)
WIKI_SESSIONS = [
    ("s1", "2023-01-10T10:00:00Z", [("Ana", "I moved to Berlin last month for a new job at Lumen."),
                                    ("Ben", "Berlin sounds great! How is the new job at Lumen?"),
                                    ("Ana", "My dog Rex loves the big parks in Berlin.")]),
    ("s2", "2023-02-11T10:00:00Z", [("Ana", "Rex chewed my new running shoes again."),
                                    ("Ben", "Ha, Rex is a menace. Did you run in Berlin?")]),
    ("s3", "2023-03-12T10:00:00Z", [("Cara", "I started a pottery class at the Kiln Studio."),
                                    ("Dev", "Pottery at Kiln Studio? Show me your first bowl!")]),
]


def full_and_ranking_only(strategy: str, env, query: str, budget: int = 500):
    """``strategy``'s recollection of ``query`` asked in full and as auto's vote asks it
    (``ranking_only``), after checking that the two agree in everything but the trace: the
    context, the items (ids, scores, roles), the sources, the reason and the abstention."""
    from trimem.strategies.base import RecallRequest
    from trimem.strategies.registry import get

    full, lean = (get(strategy).recall(env, RecallRequest(query=query, budget_tokens=budget,
                                                          ranking_only=flag))
                  for flag in (False, True))
    assert lean.context == full.context
    assert [(i.id, i.score, i.role) for i in lean.items] == [(i.id, i.score, i.role)
                                                             for i in full.items]
    assert lean.sources == full.sources and lean.route_reason == full.route_reason
    assert lean.abstain == full.abstain
    return full, lean


def listing(root) -> set[tuple[str, int, int]]:
    """Every file under ``root``: its relative path, size and modification time (a store's
    files compared before and after something that must write nothing). Not the curation
    turns' tokens and claims (``_locks/*.curated``, ``*.curate.next``, ``storage/curating.py``):
    a turn that wrote nothing still tells other processes it was taken, as a lock's marker file
    does."""
    out = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith((".curated", ".curate.next")) and os.path.basename(dirpath) == "_locks":
                continue
            st = os.stat(os.path.join(dirpath, f))
            out.add((os.path.relpath(os.path.join(dirpath, f), root), st.st_size, st.st_mtime_ns))
    return out
