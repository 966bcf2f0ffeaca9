"""Curation by an LLM: the paper's two prompts (appendices A and B) as structured outputs.

``env.llm.structured(system, user, schema)`` (OpenAI-compatible, see providers/openai_compat.py)
returns the shared, bounded models of ``llm_schema.py`` (the host's model, through sampling,
answers the same ones). Choices the paper leaves open:

* One call per prompt per session chunk of at most ``CHUNK_TURNS`` turns; turns are shown as
  ``[ref] speaker: text`` under the session's date, and the model cites those refs.
* A cited ref that names no turn of the session is dropped; an item left with no valid ref cites
  the whole chunk (its provenance is still true, only coarser); an item with empty fields is dropped.
* A model timestamp that does not parse as an ISO date falls back to the session time.
"""

from __future__ import annotations

import logging
from datetime import datetime

from .items import Episode, Fact
from .llm_schema import EpisodesOut, TuplesOut, link
from ...storage.rows import Source

log = logging.getLogger(__name__)
CHUNK_TURNS = 120

EPISODIC_PROMPT = """You curate long-term EPISODIC memory from one conversation session.
Split the session into coherent episodes (one per topic or event) and, for each, write:
- title: a short, specific title;
- summary: two or three sentences on what happened and who was involved;
- details: a narrative that keeps every concrete detail (names, places, numbers, items, opinions,
  plans, reasons) that someone could ask about later;
- timestamp: the ISO date (YYYY-MM-DD) the episode happened;
- turn_refs: the [refs] of the turns the episode comes from.
Temporal precision: resolve every relative time against the session date and write the absolute
date in the details ("last Saturday" said on 2023-05-25 -> "on Saturday, 20 May 2023"; "next
month" -> "June 2023"). Detail preservation: do not generalise; prefer the speakers' own words.
Use third person with the speakers' names; never invent anything not in the turns."""

RELATIONAL_PROMPT = """You curate long-term RELATIONAL memory from one conversation session.
Extract every fact worth remembering as a tuple:
- subject: the entity the fact is about (use the speaker's name, never "I" or "you");
- relation: a short verb phrase ("works at", "adopted", "plans to visit", "likes");
- object: what the subject relates to, specific and self-contained;
- timestamp: the ISO date (YYYY-MM-DD) the fact holds or the event happened, with relative times
  resolved against the session date ("yesterday" said on 2023-05-08 -> 2023-05-07);
- context: one sentence on the circumstances in which it was mentioned;
- turn_refs: the [refs] of the turns that state it.
Cover people, places, events, preferences, plans, relationships and possessions; one fact per
tuple; never invent anything not in the turns."""


def render_turns(turns: list[Source], when: datetime | None) -> str:
    head = f"Session date: {when.strftime('%Y-%m-%d (%A)')}\n" if when else ""
    return head + "\n".join(f"[{t.ref or t.id}] {t.speaker or '-'}: {t.text}"
                            for t in turns)


def curate_session(llm, turns: list[Source],
                   when: datetime | None) -> tuple[list[Episode], list[Fact]]:
    """(episodes, tuples) as :func:`heuristics.curate_session` makes them, with a
    ``timestamp`` each. Provider errors propagate: the caller falls back to heuristics."""
    episodes: list[Episode] = []
    tuples: list[Fact] = []
    for i in range(0, len(turns), CHUNK_TURNS):
        chunk = turns[i:i + CHUNK_TURNS]
        by_ref = {(t.ref or t.id): t for t in chunk}
        user = render_turns(chunk, when)
        eps = llm.structured(EPISODIC_PROMPT, user, EpisodesOut)
        tps = llm.structured(RELATIONAL_PROMPT, user, TuplesOut)
        e, t = link(eps.episodes, tps.tuples, by_ref, chunk, when)
        episodes += e
        tuples += t
    log.info("LLM curated %d episodes and %d tuples from %d turns", len(episodes), len(tuples),
             len(turns))
    return episodes, tuples
