"""Changed facts: which quoted turns state a value that a later message changed, and where the
latest value stands.

A claim with a *slot* (``claims.STATE``: ``subject|residence``, ``|job``, ``|study``,
``|relationship``) states something about its subject that can change. Curation's slot patterns
are wide on purpose (they help group turns into trajectories) and catch "live music" as much as
"I live in Leeds"; the paper's revise/deprecate ops also only link claims of one trajectory,
while a move told weeks later usually lands in another. So a change of value is read here, at
recall, from the claims themselves:

* a claim *states a value* of its slot when its sentence says it in the first person with a
  pattern of ``claims.CHANGES`` ("I live in", "we moved to", "my job at", "I'm dating"); the
  value is what follows the pattern (``claims.stated``: "Ghent, close to");
* for each slot of a candidate turn, every claim in the namespace that states a value of that
  slot is read (``wiki_claims`` by ``slot``), and the latest one (by its message's time) that
  is not said of the past ("before that I worked at") holds the current
  value. An earlier claim is *superseded* when its value shares no word with the
  current one (Ghent, then Porto), or when the current one ends the state ("I don't live in
  Ghent any more", ``claims.END``) and the earlier one did not. A later claim restating the same
  value ("since I lost my job at the bakery") supersedes nothing.

Then, when the query asks about that kind of state (a word of :data:`ASKS`: "where does she
*live*", "who is his *partner*"), :func:`current_first` places each current turn just before the
first turn it supersedes (adding it when the ranking lacked it), so the current value is read
before its history and the history stays. This is an order rule with no weight to fit. For a
query about something else the ranking is left alone: a current turn brought in there is off the
question and takes budget from its evidence (on the REALTALK dev chats it did, when every change
was brought in). The mark is written either way. :func:`marks` gives the line quoted
under a superseded turn, ``[changed later: 2023-08-14]``: it starts at column 0 with ``[``, which
no stored string can do inside the frame (``frame.py``), and its date is formatted here, so a
message cannot forge it.

Why order and a mark rather than dropping old values: a question about history ("where did she
live before?") needs them, and the slots come from heuristic claims that can be wrong; a wrong
mark costs a line, a wrong drop the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from . import store
from . import text as tx
from .claims import END, stated

if TYPE_CHECKING:
    from ...storage.rows import Source
    from ..space_api import StrategySpace
    from .store import Claim

COLS = ["id", "source_id", "slot", "text", "timestamp"]
# words by which a query asks about a state (general English; compared as ``text.stem`` stems)
ASKS = {"residence": "live lives living lived move moved moving home city town address reside",
        "job": "work works working worked job jobs employer employed company career office",
        "study": "study studies studying studied school university college student",
        "relationship": "partner boyfriend girlfriend husband wife dating married relationship "
                        "spouse fiance fiancee"}
_ASKS = {p: {tx.stem(w) for w in ws.split()} for p, ws in ASKS.items()}


def asked(query: str) -> set[str]:
    """The states (``ASKS`` keys) a query asks about."""
    q = set(tx.tokens(query))
    return {p for p, ws in _ASKS.items() if q & ws}


@dataclass(frozen=True)
class Change:
    current: str                 # the turn stating the slot's latest value
    when: datetime | None        # its time
    slot: str


def _time(ts: str | None) -> datetime | None:
    try:
        return datetime.fromisoformat(ts) if ts else None
    except ValueError:
        return None


def changes(space: StrategySpace, ids: list[str], claims: Claims | None = None) -> dict[str, Change]:
    """``{turn id: Change}`` for the turns of ``ids`` that state a value a later turn changed.
    ``claims``: where the claims with a slot are looked up (default: ``wiki_claims``; wiki and
    auto pass the wiki's turn maps, ``turnmap.SlottedClaims``). Both are read in claim id order,
    so ties fall alike whichever answers."""
    if not ids:
        return {}
    claims = claims or _Table(space)
    mine = _valued(sorted(claims.by_source(sorted(set(ids))), key=lambda c: c.id))
    slots = sorted({v.claim.slot for v in mine})
    if not slots:
        return {}
    latest: dict[str, tuple[datetime, str, _Stated]] = {}
    for v in _valued(sorted(claims.by_slot(slots), key=lambda c: c.id)):
        c = v.claim
        t = _time(c.timestamp)
        if t is None or v.past:
            continue
        if c.slot not in latest or (t, c.source_id) > latest[c.slot][:2]:
            latest[c.slot] = (t, c.source_id, v)
    out: dict[str, Change] = {}
    for v in mine:
        c = v.claim
        t, last = _time(c.timestamp), latest.get(c.slot)
        if t is None or last is None or last[1] == c.source_id or t >= last[0]:
            continue
        if not _superseded(v, last[2]):
            continue
        had = out.get(c.source_id)
        if had is None or (had.when is not None and had.when < last[0]):
            out[c.source_id] = Change(last[1], last[0], c.slot)
    # a turn that also states a slot's latest value is current for that slot: not superseded
    current = {v[1] for v in latest.values()}
    return {i: ch for i, ch in out.items() if i not in current}


class Claims(Protocol):
    def by_source(self, ids: list[str]) -> list[Claim]: ...
    def by_slot(self, slots: list[str]) -> list[Claim]: ...


class _Table:
    """The claims with a slot as ``wiki_claims`` holds them."""

    def __init__(self, space: StrategySpace):
        self.space = space

    def by_source(self, ids: list[str]) -> list[Claim]:
        return [c for c in store.claims(self.space, eq={"source_id": ids}, columns=COLS) if c.slot]

    def by_slot(self, slots: list[str]) -> list[Claim]:
        return store.claims(self.space, eq={"slot": slots}, columns=COLS)


@dataclass(frozen=True, slots=True)
class _Stated:
    """A claim that states a value of its slot (``claims.stated``): the value's stems, and
    whether it is said of the past."""

    claim: Claim
    value: set[str]
    past: bool


def _valued(rows: list[Claim]) -> list[_Stated]:
    """The claims that state a value of their slot."""
    out = []
    for c in rows:
        got = stated(c.text, c.slot) if c.slot else None
        if got is not None:
            out.append(_Stated(c, set(got[0]), got[1]))
    return out


def _superseded(old: _Stated, new: _Stated) -> bool:
    """Whether ``new`` (a later claim of the same slot) changes the value ``old`` stated."""
    ends_new, ends_old = (bool(END.search(c.claim.text.lower())) for c in (new, old))
    if ends_new and not ends_old:
        return True
    return bool(old.value and new.value and not old.value & new.value)


def current_first(order: list[str], found: dict[str, Change], query: str) -> list[str]:
    """``order`` with each current turn of a state ``query`` asks about just before the first
    turn it supersedes."""
    states = asked(query)
    out: list[str] = []
    placed: set[str] = set()
    for i in order:
        ch = found.get(i)
        if ch is not None and ch.slot.rsplit("|", 1)[-1] in states and ch.current not in placed:
            out.append(ch.current)
            placed.add(ch.current)
        if i not in placed:
            out.append(i)
            placed.add(i)
    return out


def marks(found: dict[str, Change]) -> dict[str, str]:
    """The line quoted under each superseded turn."""
    return {i: f"[changed later: {ch.when.strftime('%Y-%m-%d')}]\n" if ch.when is not None
            else "[changed later]\n" for i, ch in found.items()}


def listed(found: dict[str, Change], chosen: list[Source]) -> list[dict]:
    """The marked turns among the quoted rows ``chosen``, for the trace (``explain``)."""
    ids = {r.id for r in chosen}
    return [{"source_id": i, "current": ch.current, "slot": ch.slot}
            for i, ch in found.items() if i in ids]
