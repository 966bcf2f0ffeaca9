"""Named speakers: which stored speakers a query names, and the query without their names.

Shared by ``plain.search_sources_named`` (the name-free search that ``workspace`` and ``wiki``
use) and ``workspace``'s speaker affinity (see the module docstring of ``workspace/roles.py``).
A speaker is *named* when one of the tokens of its label (3+ letters), or one of the names the
conversation calls it by (``aliases``: speaker label -> names, learned by
``strategies/aliases.py``), occurs capitalised in the query as a word, compared without case (a
label written in lower case is still named by a capitalised question); a possessive "'s" is
stripped ("Ana's" names Ana). ``aliases`` is optional everywhere: without it only labels count.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

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


def name_tokens(speaker: str | None, aliases: dict[str, set[str]] | None = None) -> set[str]:
    """The words that name ``speaker``: its label's tokens of 3+ letters and its aliases."""
    if not speaker:
        return set()
    return {t for t in _WORD.findall(speaker) if len(t) >= 3} | set((aliases or {}).get(speaker, ()))


def named_speakers(query: str, speakers: Iterable[str | None],
                   aliases: dict[str, set[str]] | None = None) -> set[str]:
    """Those of ``speakers`` the query names; empty when it names none or every one of them
    (then naming separates nothing)."""
    names = {n.casefold() for n in query_names(query)}
    distinct = {s for s in speakers if s}
    named = {s for s in distinct if {t.casefold() for t in name_tokens(s, aliases)} & names}
    return set() if named == distinct else named


def speaker_match(query: str, speakers: Sequence[str | None],
                  aliases: dict[str, set[str]] | None = None) -> np.ndarray:
    """1.0 for the units whose speaker the query names, see the module docstring."""
    named = named_speakers(query, speakers, aliases)
    if not named:
        return np.zeros(len(speakers))
    return np.array([1.0 if s in named else 0.0 for s in speakers])


def addressee(speakers: Sequence[str | None], i: int) -> str | None:
    """Whom turn ``i`` of a session (its speakers in order) most likely speaks to: the previous
    other speaker, else the next one. In a two-party chat that is always the other person; in a
    group it is the one being answered. None when nobody else speaks."""
    me = speakers[i]
    prev = next((s for s in reversed(speakers[:i]) if s and s != me), None)
    return prev or next((s for s in speakers[i + 1:] if s and s != me), None)


def without_speakers(query: str, speakers: set[str],
                     aliases: dict[str, set[str]] | None = None) -> str:
    """The query for BM25 and the name-free dense list, without the words naming a speaker.

    Sources are indexed as ``"speaker: text"`` (``storage.sources.search_text``), so a speaker's
    name in the query matches every turn that speaker said, and BM25's length normalisation then
    ranks that speaker's shortest turns ("Wow, how did it feel?") above the turns that carry the
    query's content words. The speaker part of the query is served by ``speaker_match`` instead.
    When nothing but names would be left, the query is kept whole.
    """
    tokens = set().union(*(name_tokens(s, aliases) for s in speakers)) if speakers else set()
    if not tokens:
        return query
    folded = {t.casefold() for t in tokens}

    def names_one(w: str) -> bool:
        w = re.sub(r"['’]s$", "", w.strip("?!.,;:\"()"))
        return w in tokens or (w[:1].isupper() and w.casefold() in folded)

    kept = [w for w in query.split() if not names_one(w)]
    return " ".join(kept) if any(_WORD.search(w) for w in kept) else query
