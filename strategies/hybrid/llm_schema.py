"""The one set of schemas every model's output goes through (OpenAI-compatible or sampled).

A model's answer is data, never trusted: it is parsed into these pydantic models (bounded
lengths and counts), and :func:`link` keeps only what cites turns of the session it was shown,
and no more than the size of those turns allows (``strategies/model_bounds.py``).
Anything that fails (no JSON, wrong shape, nothing left) raises :class:`ProviderError`, and the
caller keeps or falls back to the heuristics; the session's sources are never touched.

Turns are shown to a model as one JSON object a line (``{"turn": "t3", "speaker": ..., "text":
...}``): a stored string stays a quoted JSON string, so it cannot start a line of its own or pass
for a turn, and the model cites the short labels the server made (``t3``), never stored refs.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Annotated, TypeVar

from pydantic import BaseModel, Field, StringConstraints, ValidationError
from ...storage.rows import Source
from .items import Episode, Fact
from ..model_bounds import first, most_episodes, most_facts

M = TypeVar("M", bound=BaseModel)
Short = Annotated[str, StringConstraints(max_length=300)]
Medium = Annotated[str, StringConstraints(max_length=2_000)]
Long = Annotated[str, StringConstraints(max_length=6_000)]
Refs = Annotated[list[Annotated[str, StringConstraints(max_length=600)]], Field(max_length=400)]
MERGED_MAX_CHARS = 1_200   # a merged memory's text, whoever writes it
CLAIM_MAX_CHARS = 600      # one wiki claim
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class EpisodeOut(BaseModel):
    title: Short
    summary: Medium
    details: Long = ""
    timestamp: Short = Field(default="", description="ISO date YYYY-MM-DD")
    turn_refs: Refs = Field(default_factory=list)


class EpisodesOut(BaseModel):
    episodes: Annotated[list[EpisodeOut], Field(max_length=100)]


class TupleOut(BaseModel):
    subject: Short
    relation: Short
    object: Medium
    timestamp: Short = Field(default="", description="ISO date YYYY-MM-DD")
    context: Medium = ""
    turn_refs: Refs = Field(default_factory=list)


class TuplesOut(BaseModel):
    tuples: Annotated[list[TupleOut], Field(max_length=400)]


class ClaimOut(BaseModel):
    """One of the wiki's claims (TrajWiki): an atomic fact from one turn."""

    turn: Short = Field(description="the label of the one turn it comes from, e.g. S1.t3")
    text: Annotated[str, StringConstraints(max_length=CLAIM_MAX_CHARS)]
    subject: Short = Field("", description="who or what the claim is about")
    state: Short = Field("", description="residence | job | study | relationship when the claim "
                                         "states such a changeable state of the subject, else \"\"")
    ends_state: bool = Field(False, description="true when it says such a state ended")


class SessionOut(BaseModel):
    """One session's curation in a single answer: both of the paper's stores, and the wiki's
    claims."""

    session: Short = Field(description="the session label shown, e.g. S1")
    episodes: Annotated[list[EpisodeOut], Field(max_length=100)] = Field(default_factory=list)
    tuples: Annotated[list[TupleOut], Field(max_length=400)] = Field(default_factory=list)
    claims: Annotated[list[ClaimOut], Field(max_length=600)] = Field(default_factory=list)


class MergeOut(BaseModel):
    merge: Short = Field(description="the merge label shown, e.g. M1")
    text: Annotated[str, StringConstraints(max_length=MERGED_MAX_CHARS)]


class HostOut(BaseModel):
    """What the host's model answers to a sampling request: session curations and merge texts."""

    sessions: Annotated[list[SessionOut], Field(max_length=20)] = Field(default_factory=list)
    merges: Annotated[list[MergeOut], Field(max_length=50)] = Field(default_factory=list)


def parse(text: str, schema: type[M]) -> M:
    """``text`` (a bare or fenced JSON object) validated into ``schema``; ProviderError if not."""
    from ...providers.base import ProviderError  # lazy: numpy (providers.base), not at start-up

    fenced = _FENCE.match(text or "")
    body = fenced.group(1) if fenced else (text or "").strip()
    try:
        return schema.model_validate_json(body)
    except ValidationError as exc:
        raise ProviderError(f"the model's answer is not a valid {schema.__name__}: "
                            f"{exc.error_count()} error(s), first: {exc.errors()[0]['msg']}") from exc


def schema_text(schema: type[BaseModel]) -> str:
    return json.dumps(schema.model_json_schema(), separators=(",", ":"))


def turn_lines(turns: list[Source], label: str = "t") -> tuple[str, dict[str, Source]]:
    """Turns as JSON lines with server-made labels; and label -> turn."""
    by_label: dict[str, Source] = {}
    lines: list[str] = []
    for i, t in enumerate(turns, 1):
        lab = f"{label}{i}"
        by_label[lab] = t
        lines.append(json.dumps({"turn": lab, "speaker": t.speaker or "-",
                                 "text": t.text}, ensure_ascii=False))
    return "\n".join(lines), by_label


def when(text: str, fallback: datetime | None) -> datetime | None:
    try:
        d = datetime.fromisoformat(text.strip()[:19])
    except (ValueError, AttributeError):
        return fallback
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def _cited(refs: list[str], by_label: dict[str, Source],
           chunk: list[Source]) -> tuple[list[str], list[str]]:
    """Source ids and refs of the turns cited; none valid -> the whole chunk (coarser, still true)."""
    rows = [by_label[r] for r in dict.fromkeys(refs) if r in by_label] or chunk
    return [r.id for r in rows], [r.ref or r.id for r in rows]


def link(episodes: list[EpisodeOut], tuples: list[TupleOut], by_label: dict[str, Source],
         chunk: list[Source], session_time: datetime | None) -> tuple[list[Episode], list[Fact]]:
    """Validated model items as the episodes and tuples ``store.build_rows`` writes: the
    first of them, as many as ``chunk`` (the turns shown) allows (``model_bounds``)."""
    eps: list[Episode] = []
    tps: list[Fact] = []
    for e in episodes:
        if not (e.title.strip() or e.summary.strip()):
            continue
        sids, refs = _cited(e.turn_refs, by_label, chunk)
        eps.append(Episode(title=e.title.strip(), summary=e.summary.strip(),
                           details=e.details.strip() or e.summary.strip(),
                           timestamp=when(e.timestamp, session_time), source_ids=sids, refs=refs))
    for t in tuples:
        if not (t.subject.strip() and t.relation.strip() and t.object.strip()):
            continue
        sids, refs = _cited(t.turn_refs, by_label, chunk)
        ts = when(t.timestamp, session_time)
        tps.append(Fact(subject=t.subject.strip(), relation=t.relation.strip(),
                        object=t.object.strip(), context=t.context.strip(),
                        dates=[ts.strftime("%-d %B %Y")] if ts else [],
                        text=f"{t.subject.strip()} {t.relation.strip()} {t.object.strip()}",
                        timestamp=ts, source_ids=sids, refs=refs))
    return (first(eps, most_episodes(chunk), "episodes"),
            first(tps, most_facts(chunk), "relational tuples"))
