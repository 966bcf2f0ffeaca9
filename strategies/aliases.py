"""The names people are called by: which names in a namespace's messages refer to which speaker.

A speaker label is not always the name people use: hosts send ``user`` / ``assistant``, a chat
export labels a person by a handle or a first name in lower case, and people call each other by
other names than their labels. A question that names a person must find that person's turns
whatever the label, so the names are learned from the conversation itself:

- **Self-introduction** in the speaker's own turn: "my name is X", "call me X", "I go by X"
  (``INTRO_VOTES`` votes), "I'm X" / "I am X" when X ends the clause (one vote).
- **Signature**: a turn whose last line is a dash and a name ("- X"): one vote for its speaker.
- **Address** (vocative): a name after a greeting or thanks ("Hey X", "Thank you X"), opening a
  sentence before a comma or "!" ("X, look"), or closing one after a comma or after a word that
  is not a preposition or determiner ("That's so cool X!", "See you tomorrow X"). It refers to
  someone else than the speaker: the previous other speaker of the session (one vote) and, when
  different, the next one (half a vote). In a two-party chat that is the other person; in a group
  it is most often the one answered.

A candidate name is a capitalised word that is no sentence starter (``NOT_NAMES``), no term of
address ("Guys") and not written in lower case in the same sessions as often as capitalised
("Will", "Sunday"). It becomes an alias of speaker S when its votes for S are at least
``MIN_VOTES`` and ``SHARE`` of all its votes, when S's own turns (self-introductions aside) use it
less often than it is used for S, and when it is no token of another speaker's label.

Learned per namespace and cached in this process (``strategies/nscache.py``): a recall reads
nothing while the source count is unchanged; when it moved, only the sessions whose message count
changed are read again. A cold cache takes the votes curation stored (``aliasstats.py``) and
counts only the sessions without a current stored row, reading their sources in one scan.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .base import spoken
from .nscache import NamespaceCache
from .wiki.text import NOT_NAMES, STOP

if TYPE_CHECKING:
    from ..storage.rows import Source
    from .space_api import StrategySpace

log = logging.getLogger(__name__)
MIN_VOTES, SHARE, INTRO_VOTES = 2.0, 0.75, 2.0
RECHECK_S = 2.0
NAME = r"([A-Z][a-z]+(?:-[A-Z][a-z]+)?)"
ADDRESS_TERMS = set("""guys guy everyone everybody all folks team friend friends buddy bud dude man
bro sis mate babe baby honey sweetie sweetheart darling dear love sir madam maam girl girls boys
boy lady ladies gentlemen people fam bestie""".split())
_GREET = (r"(?:hey|hi|hiya|hello|yo|dear|morning|evening|good (?:morning|night|evening|afternoon)|"
          r"night|bye|goodbye|thanks|thank you|thx|congrats|congratulations|sorry|welcome back|"
          r"love you|miss you|see you|happy birthday|cheers|ok|okay|oh|wow|yes|yeah|no|haha)")
_AFTER_GREETING = re.compile(rf"(?i:^{_GREET})[\s,!.]+{NAME}\b(?!\s+[A-Z])")
_OPENING = re.compile(rf"^{NAME}\s*[,!]")
_CLOSING = re.compile(rf"(?:,|\b([a-z]+))\s+{NAME}\s*[!?.…]*$")
_NOT_BEFORE = set("""to in at from of for with on into onto near by about like the a an my your our
his her their this that these those and or visit visiting visited called named watch watching
watched play played playing love loves loved meet met see saw call is was are were be been
am go went going come came through across over around""".split())
_INTRO_STRONG = re.compile(rf"(?i:\bmy name is|\bmy name's|\bcall me|\bi go by)\s+{NAME}\b")
_INTRO_WEAK = re.compile(rf"(?i:\bi'm|\bi’m|\bi am|\bim)\s+{NAME}\s*(?:[.,!?;]|$)")
_SIGNATURE = re.compile(rf"(?:^|\n)\s*[-–—~]\s*{NAME}\s*$")
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")
_CAP = re.compile(r"\b[A-Z][a-z]+\b")
_WORD = re.compile(r"\b[a-z]+\b")


@dataclass
class SessionStats:
    n: int
    votes: Counter = field(default_factory=Counter)    # (name, speaker) -> votes
    own: Counter = field(default_factory=Counter)      # (name, speaker) -> uses in own turns
    caps: Counter = field(default_factory=Counter)     # name -> capitalised uses
    mid: Counter = field(default_factory=Counter)      # name -> capitalised, not opening a sentence
    lower: Counter = field(default_factory=Counter)    # name -> lower-case uses, same sessions
    speakers: set = field(default_factory=set)


def _candidate(w: str) -> bool:
    return w not in NOT_NAMES and w.lower() not in STOP and w.lower() not in ADDRESS_TERMS


def vocatives(text: str) -> list[str]:
    """The names ``text`` addresses someone by (see the module docstring)."""
    out = []
    for s in _SENT.split(text):
        s = s.strip().strip("\"'()")
        if not s:
            continue
        for rx in (_AFTER_GREETING, _OPENING):
            m = rx.search(s)
            if m and _candidate(m.group(1)):
                out.append(m.group(1))
        m = _CLOSING.search(s)
        if m and (m.group(1) or "") not in _NOT_BEFORE and _candidate(m.group(2)):
            out.append(m.group(2))
    return out


def introductions(text: str) -> list[tuple[str, float]]:
    """Names the writer of ``text`` gives as their own, with their votes."""
    out = [(m.group(1), INTRO_VOTES) for m in _INTRO_STRONG.finditer(text)]
    out += [(m.group(1), 1.0) for m in _INTRO_WEAK.finditer(text)]
    out += [(m.group(1), 1.0) for m in _SIGNATURE.finditer(text.rstrip())]
    return [(n, v) for n, v in out if _candidate(n)]


def session_stats(rows: list[Source]) -> SessionStats:
    """Votes of one session's messages (ordered by seq); tool rows are nobody's words."""
    rows = spoken(rows)
    st = SessionStats(n=len(rows))
    spk = [r.speaker or "" for r in rows]
    st.speakers = {s for s in spk if s}
    for i, r in enumerate(rows):
        if spk[i]:
            _message_votes(st, spk, i, r.text or "")
    names = {n for n, _ in st.votes}
    if names:
        low = Counter(w for r in rows for w in _WORD.findall(r.text or ""))
        st.lower.update({n: low[n.lower()] for n in names if low[n.lower()]})
    return st


def _message_votes(st: SessionStats, spk: list[str], i: int, text: str) -> None:
    """Message ``i``'s votes: a name its speaker introduces as theirs, a name it calls out
    (for the speaker before it, and half a vote for the one after), and the capitalised words
    its speaker uses (of their own, mid-sentence)."""
    me = spk[i]
    intro = introductions(text)
    # the ignores below: typeshed types Counter values as int; votes are fractional
    for name, v in intro:
        st.votes[(name, me)] += v  # pyright: ignore[reportArgumentType]
    prev = next((s for s in reversed(spk[:i]) if s and s != me), None)
    nxt = next((s for s in spk[i + 1:] if s and s != me), None)
    said = vocatives(text)
    for name in said:
        if prev:
            st.votes[(name, prev)] += 1.0  # pyright: ignore[reportArgumentType]
        if nxt and nxt != prev:
            st.votes[(name, nxt)] += 0.5  # pyright: ignore[reportArgumentType]
    skip = Counter(n for n, _ in intro) + Counter(said)
    for s in _SENT.split(text):
        st.mid.update(_CAP.findall(s.strip().strip("\"'()"))[1:] if s.strip() else [])
    for w in _CAP.findall(text):
        st.caps[w] += 1
        if skip[w] > 0:
            skip[w] -= 1
        else:
            st.own[(w, me)] += 1


def learn(stats: list[SessionStats]) -> dict[str, set[str]]:
    """speaker label -> the names (not tokens of any label) that refer to that speaker."""
    votes, own, caps, lower, mid, labels = Counter(), Counter(), Counter(), Counter(), Counter(), set()
    for st in stats:
        votes.update(st.votes)
        mid.update(st.mid)
        own.update(st.own)
        caps.update(st.caps)
        lower.update(st.lower)
        labels |= st.speakers
    label_tokens = {t.casefold() for s in labels for t in re.findall(r"[A-Za-z]+", s)}
    total = Counter()
    for (name, _), v in votes.items():
        total[name] += v
    out: dict[str, set[str]] = {}
    for (name, spk), v in votes.items():
        if (v < MIN_VOTES or v < SHARE * total[name] or name.casefold() in label_tokens
                or own[(name, spk)] >= v or lower[name] >= caps[name] or mid[name] < MIN_VOTES):
            continue
        out.setdefault(spk, set()).add(name)
    return out


@dataclass
class Learned:
    gen: int
    counts: tuple
    checked: float = 0.0
    sessions: dict[str, SessionStats] = field(default_factory=dict)
    aliases: dict[str, set[str]] = field(default_factory=dict)
    speakers: frozenset[str] = frozenset()   # every speaker label of the namespace


def _counts(space: StrategySpace) -> tuple:
    return (space.sources.count(),)


def speaker_aliases(ns, space: StrategySpace) -> dict[str, set[str]]:
    """The learned aliases of ``space``'s speakers, cached in the namespace's context ``ns``
    (``Env.ns``; see the module docstring)."""
    return _learned(ns, space).aliases


def namespace_speakers(ns, space: StrategySpace) -> frozenset[str]:
    """Every speaker label of ``space``'s messages (from the same cache as the aliases)."""
    return _learned(ns, space).speakers


def _store(stats: dict[str, SessionStats], space: StrategySpace) -> None:
    """Keep what a cold cache counted for the next process (``aliasstats.py``); a store that
    cannot be written (full or read-only) only costs the next process the count again."""
    from .aliasstats import save  # lazy: cycle with strategies.aliasstats

    try:
        save(space, stats)
    except Exception:
        log.exception("storing the name votes of %d sessions failed", len(stats))


def _learned(ns, space: StrategySpace) -> Learned:
    cache = ns.state("aliases.learned", lambda: NamespaceCache(_counts))
    item, gen, counts = cache.get(space, RECHECK_S)
    if item is not None:
        return item
    with ns.state("aliases.lock", threading.Lock):
        old = cache.current()
        sessions = dict(old.sessions) if old is not None else {}
        listed = {r.session_id: r.n_messages for r in space.sessions.all()
                  if r.namespace in ("", space.namespace)}
        for sid in list(sessions):
            if sid not in listed:
                del sessions[sid]
        stale = [sid for sid, n in listed.items() if sid not in sessions or sessions[sid].n != n]
        if len(stale) > 3:   # a cold cache: the votes curation stored (aliasstats.py)
            from .aliasstats import stored  # lazy: cycle with strategies.aliasstats

            kept = stored(space, {sid: listed[sid] for sid in stale})
            sessions.update(kept)
            stale = [sid for sid in stale if sid not in kept]
        if len(stale) > 3:   # one scan instead of a query per session
            by: dict[str, list[Source]] = {}
            for r in space.sources.all():
                by.setdefault(r.session_id, []).append(r)
            read = {sid: sorted(by.get(sid, []), key=lambda r: r.seq) for sid in stale}
        else:
            read = {sid: space.sources.by_session(sid) for sid in stale}
        for sid, got in read.items():
            sessions[sid] = session_stats(got)
            sessions[sid].n = listed[sid]
        if len(read) > 3:
            _store({sid: sessions[sid] for sid in read}, space)
        item = Learned(gen=gen, counts=counts, checked=time.monotonic(), sessions=sessions,
                       aliases=learn(list(sessions.values())),
                       speakers=frozenset().union(*(st.speakers for st in sessions.values())))
        cache.put(item)
    return item
