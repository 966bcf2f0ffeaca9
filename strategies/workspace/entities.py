"""Named speakers: who a unit is about, and the name-free query the searches use.

A memory unit is a turn said by someone. When the query names a person and that person is also
a speaker in memory, the turns that person said are first-person evidence about them ("what
does Ana do to relax?" is answered by Ana's own "running clears my head", which shares no word
with the question). The unit's speaker is an entity of the unit, like a name in its text; the
paper's alpha_q is a pure cosine, which cannot see it (MiniLM barely separates "Ana said X" from
"Ben said X").

``speaker_match`` is observable from the query and the stored ``speaker`` field only:
- a speaker is *named* when one of the tokens of its name (3+ letters) occurs capitalised in the
  query as a word (a possessive "'s" is stripped: "Ana's" names Ana);
- the feature is 1 for units said by a named speaker, else 0; it is all zeros when the query
  names no speaker or names every speaker among the candidates (then it separates nothing).

Recall adds ``speaker_w`` * match to the unit's own affinity (capped at 1) before the within-
thread context inheritance, so the question asked by the other speaker still inherits from the
named speaker's reply next to it (``strategy.py`` docstring). With no speakers stored (notes, or
an agent whose speakers are "user" / "assistant" and never named) nothing changes.
"""

from __future__ import annotations

import re

import numpy as np

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def query_names(query: str) -> set[str]:
    """Capitalised words of the query, possessive stripped (``"Ana's"`` -> ``"Ana"``)."""
    out = set()
    for w in _WORD.findall(query):
        w = re.sub(r"['’]s$", "", w)
        if w[:1].isupper():
            out.add(w)
    return out


def name_tokens(speaker: str | None) -> set[str]:
    if not speaker:
        return set()
    return {t for t in _WORD.findall(speaker) if len(t) >= 3}


def speaker_match(query: str, speakers: list[str | None]) -> np.ndarray:
    """1.0 for the units whose speaker the query names, see the module docstring."""
    names = query_names(query)
    distinct = {s for s in speakers if s}
    named = {s for s in distinct if name_tokens(s) & names}
    if not named or named == distinct:
        return np.zeros(len(speakers))
    return np.array([1.0 if s in named else 0.0 for s in speakers])


def without_speakers(query: str, speakers: set[str]) -> str:
    """The query for the BM25 list, without the words that name a speaker.

    Sources are indexed as ``"speaker: text"`` (``storage.sources.search_text``), so a speaker's
    name in the query matches every turn that speaker said, and BM25's length normalisation then
    ranks that speaker's shortest turns ("Wow, how did it feel?") above the turns that carry the
    query's content words. The speaker part of the query is served by ``speaker_match`` instead.
    When nothing but names would be left, the query is kept whole.
    """
    tokens = set().union(*(name_tokens(s) for s in speakers)) if speakers else set()
    if not tokens:
        return query
    kept = [w for w in query.split() if re.sub(r"['’]s$", "", w.strip("?!.,;:\"()")) not in tokens]
    return " ".join(kept) if any(_WORD.search(w) for w in kept) else query
