"""A question that names some of the namespace's speakers: their own turns weigh more.

What is asked about a person is mostly in what that person said: on the LoCoMo development
conversations 94-97 % of the evidence turns of a question naming one speaker are that speaker's
(``search.py``). The turn search already ranks the named speakers' own turns in a list of their
own; this is the same prior applied once more to ``auto``'s fused ranking: a turn said by
someone the question does not name keeps ``UNNAMED_W`` of its fused score, so at equal votes
the named speakers' turns come first, while a turn of someone else that the voters rank well
above them still gets in (an answer another person gave stays reachable).

"Named" is ``speakers.named_speakers``: by label or by a name the conversation calls them
(``aliases.py``); a question naming nobody, or every speaker, changes nothing. Host chats
(``user`` / ``assistant``) are named by nobody, so they are never touched.

``UNNAMED_W`` = 0.7 was chosen on both development sets among 1 (off), 0.7 and 0.4, at 2,000
tokens (bench/README.md, "What is in-sample", with each conversation left out in turn); it is
the one number of this rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..aliases import namespace_speakers, speaker_aliases
from ..base import Env
from ..speakers import named_speakers
from ...storage.rows import Source

UNNAMED_W = 0.7
Fused = list[tuple[str, float, dict]]


def weigh_named(env: Env, query: str, fused: Fused, rows: dict[str, Source],
                w: float = UNNAMED_W) -> tuple[Fused, set[str], float]:
    """``fused`` with :func:`demote_unnamed` applied for the speakers ``query`` names (``rows``:
    the fused turns' rows by id, read once per recall by ``auto``); also the named speakers and
    the weight that applied (1.0 when none did)."""
    named = named_speakers(query, namespace_speakers(env.ns, env.space),
                           speaker_aliases(env.ns, env.space))
    if not named or w == 1.0:
        return fused, named, 1.0
    said = {i: r.speaker for i, r in rows.items()}
    return demote_unnamed(fused, said, named, w), named, w


def demote_unnamed(fused: Fused, said: Mapping[str, str | None], named: Iterable[str],
                   w: float = UNNAMED_W) -> Fused:
    """``fused`` (id, score, ranks) with the score of each turn whose speaker (``said``) is not
    among ``named`` multiplied by ``w``, best first again (ties keep their order)."""
    keep = set(named)
    if not keep or w == 1.0:
        return fused
    out = [(i, s if said.get(i) in keep else s * w, r) for i, s, r in fused]
    return sorted(out, key=lambda x: -x[1])
