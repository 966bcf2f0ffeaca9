"""Each session's name votes (``aliases.SessionStats``) kept on disk, so a process that starts on
a large namespace learns its speakers' names from one small table instead of re-reading every
message.

Counting the votes reads every turn with a dozen regular expressions: about 2.5 ms per session,
so 12–17 s for the 5,000 sessions of a 100,000-turn namespace, paid by the first recall of every
new process and again after each forget. Curation (which reads the session anyway) stores them
here, one row per session keyed by its id and tagged with its message count; ``aliases._learned``
takes a stored row only while the session still has that many messages, and counts the rest
itself; when that was more than a few sessions (a store curated before this table existed, or
with curation off) it stores what it counted. Forget drops the rows of the sessions it touched
(their count need not move), and their re-curation writes them again. Like every derived table
this one can be rebuilt from the sources: it holds counts of capitalised words (names), not the
messages; a forget drops them before it purges old versions, so they leave the disk too.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from .aliases import SessionStats, session_stats

if TYPE_CHECKING:
    from .space_api import StrategySpace

KIND = "alias_stats"
SCHEMA = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("n", pa.int64()),
                    ("stats", pa.string())])


def encode(st: SessionStats) -> str:
    return json.dumps({
        "votes": [[k[0], k[1], v] for k, v in st.votes.items()],
        "own": [[k[0], k[1], v] for k, v in st.own.items()],
        "caps": st.caps, "mid": st.mid, "lower": st.lower, "speakers": sorted(st.speakers)})


def decode(n: int, text: str) -> SessionStats:
    d = json.loads(text)
    return SessionStats(n=n, votes=Counter({(a, b): v for a, b, v in d["votes"]}),
                        own=Counter({(a, b): v for a, b, v in d["own"]}),
                        caps=Counter(d["caps"]), mid=Counter(d["mid"]), lower=Counter(d["lower"]),
                        speakers=set(d["speakers"]))


@dataclass(frozen=True, slots=True)
class StatsRow:
    """One stored row: a session's id, the message count its votes were counted at, and the
    votes as JSON (decoded only for a row that is still current)."""

    id: str
    n: int
    stats: str

    @classmethod
    def of(cls, row: dict[str, Any]) -> StatsRow:
        return cls(row["id"], row["n"], row["stats"])

    @classmethod
    def counted(cls, session_id: str, st: SessionStats) -> StatsRow:
        return cls(session_id, st.n, encode(st))

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "n": self.n, "stats": self.stats}


def curate(space: StrategySpace, session_id: str) -> None:
    """Count and store one session's votes (called by curation for every session it curates)."""
    sess = space.sessions.get(session_id)   # its count first: messages added after it make the
    rows = space.sources.by_session(session_id)   # row's count stale, never a stale row current
    if sess is None or not rows:
        return
    st = session_stats(rows)
    st.n = sess.n_messages
    save(space, {session_id: st})


def save(space: StrategySpace, stats: dict[str, SessionStats]) -> None:
    """Store these sessions' votes, each tagged with its ``n`` (the session's message count
    read *before* its messages were)."""
    if stats:
        space.derived.upsert(KIND, SCHEMA, [StatsRow.counted(sid, st).as_dict()
                                    for sid, st in stats.items()])


def stored(space: StrategySpace, counts: dict[str, int]) -> dict[str, SessionStats]:
    """The stored votes of the sessions in ``counts`` (session id -> its message count now)
    whose row was counted at that many messages."""
    if space.derived.table(KIND) is None:
        return {}
    out = {}
    for r in map(StatsRow.of, space.derived.rows(KIND, columns=["id", "n", "stats"])):
        if r.id in counts and r.n == counts[r.id]:
            out[r.id] = decode(counts[r.id], r.stats)
    return out


def drop(space: StrategySpace, session_ids: Iterable[str]) -> None:
    """Forget the stored votes of these sessions (their messages changed without their count)."""
    ids = sorted(set(session_ids))
    if ids and space.derived.table(KIND) is not None:
        space.derived.delete_rows(KIND, {"id": ids})
