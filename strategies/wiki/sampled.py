"""The wiki's claims written by another model: the host's, through MCP sampling.

When ``consolidate`` has the host's model curate a session (``server/host_model.py``), the same
answer carries the session's claims in ``llm_schema.ClaimOut`` (the label of the turn each
comes from, its text, subject, changeable state, whether it ends one). They are validated here
(a turn that was not shown, an empty text or an unknown state is dropped claim by claim) and
turned into the session's snapshots through ``claims.build_snapshots``'s own LLM path (the
exchanges, ids, vectors, dates and slots are those of any other snapshot). An exchange the
answer gave no valid claim for keeps its sentence claims, so no turn loses its claims; a
session with no valid claim at all is left as the heuristics wrote it.

Each claim the host wrote carries ``written_by`` (``sampling:<model>``) in its snapshot, where
``explain`` finds it. The snapshots replace the session's earlier ones (same ids: one per
exchange); the trajectories, claim table and pages follow at the wiki's replay, which the same
``consolidate`` call runs right after. A session not curated yet (still queued) needs no
replay: its curation appends the stored snapshots like any other.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...storage.rows import Source
from ..base import spoken
from .claims import build_snapshots, exchanges, opener_of
from . import store
from .store import ensure, put_snapshots

if TYPE_CHECKING:
    from ..space_api import StrategySpace

STATES = ("residence", "job", "study", "relationship")


class _Given:
    """The ``llm`` ``build_snapshots`` asks per exchange, answering with claims already given
    (a list of ``(message_index, ClaimOut)``), in the ``_LLMClaims`` shape it passes in."""

    def __init__(self, items: list[tuple[int, Any]]):
        self.items = items

    def structured(self, system: str, user: str, schema):
        return schema.model_validate({"claims": [
            {"message_index": i, "text": c.text.strip(), "subject": c.subject.strip(),
             "state": c.state.strip().lower() if c.state.strip().lower() in STATES else "",
             "ends_state": bool(c.ends_state)} for i, c in self.items]})


def valid_claims(claims: list, by_label: dict[str, Source]) -> dict[str, list]:
    """Source id -> the claims that cite a shown turn and have a text, in the answer's order."""
    out: dict[str, list] = {}
    for c in claims:
        row = by_label.get(c.turn.strip())
        if row is not None and c.text.strip():
            out.setdefault(row.id, []).append(c)
    return out


def write_claims(space: StrategySpace, session_id: str, by_label: dict[str, Source], claims: list,
                 written_by: str) -> int:
    """Store the session's snapshots with the host's claims; the number of host claims used
    (0: nothing was written, the session keeps what it had)."""
    ensure(space)
    given = valid_claims(claims, by_label)
    rows = spoken(space.sources.by_session(session_id))
    if not given or not rows:
        return 0
    when = space.sessions.time(session_id) or rows[0].timestamp
    vectors = space.sources.vectors([r.id for r in rows])
    opener = opener_of(rows)
    snaps, used = [], 0
    for k, ex in enumerate(exchanges(rows, opener)):
        items = [(i, c) for i, r in enumerate(ex) for c in given.get(r.id, [])]
        # one exchange at a time, so that the heuristics fill in an exchange with no host claim
        snap = build_snapshots(session_id, ex, when, vectors, _Given(items) if items else None,
                               opener=opener, idx0=k)[0]
        if items:
            snap = replace(snap, claims=[replace(c, written_by=written_by) for c in snap.claims])
            used += len(snap.claims)
        snaps.append(snap)
    if not used:
        return 0
    keep = {s.id for s in snaps}
    stale = [s.id for s in store.snapshots(space, eq={"session_id": session_id}, columns=["id"])
             if s.id not in keep]
    if stale:     # the session was cut into exchanges differently before (appended messages)
        store.delete_snapshots(space, stale)
    put_snapshots(space, snaps)
    return used


def written_by(space: StrategySpace, snapshot_id: str, claim_id: str) -> str | None:
    """Who wrote a claim, when another model did (``None``: the sentence heuristics)."""
    rows = store.snapshots(space, eq={"id": snapshot_id}, columns=["id", "claims"])
    for c in rows[0].claims if rows else []:
        if c.id == claim_id:
            return c.written_by
    return None
