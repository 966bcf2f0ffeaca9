"""Snapshots and claims: each exchange of a session becomes one immutable episodic snapshot.

Choices (the paper says "each dialogue exchange", "extracted claims", "speaker and temporal
context", "links to raw source messages"):

- **Exchange**: the session's *opener* opens an exchange; it runs until the opener speaks
  again after someone else has replied (A,B | A,B,B | A). The opener is the host's ``user``
  when the session has one (an agent session: the user's prompt opens each exchange, even when
  the assistant spoke first), else the session's first speaker (a chat between named people).
  Either way it is a property of the whole session, so a session remembered one exchange at a
  time (a host's hooks, ``remember`` after every reply) is cut as it would be remembered at
  once. A session with one speaker gives one exchange per message. Every message of the
  session belongs to exactly one snapshot.
  Snapshots are immutable: messages appended to a session later form new exchanges of their own
  (a reply appended to an earlier exchange starts a new snapshot rather than rewriting it).
- **Claims** (no LLM): each sentence of a message with at least two content words is a claim; a
  bracketed note a host puts in a message (an attachment's description, ``[...]``) starts a
  sentence of its own, so it is a claim by itself. A claim keeps its speaker,
  its *subject* (the speaker when the sentence is in the first person, else a named entity
  opening the sentence, else the speaker), its source id and ref,
  the session time, entities, facets and resolved dates (``dates.resolve``).
- **Slot** of a claim: ``subject|predicate`` when the sentence states a changeable state
  (``STATE``: where one lives, works, studies, one's relationship); claims on the same slot revise
  each other inside a trajectory. **End cue** (``END``): the claim ends a state ("no longer",
  "quit", "broke up", "sold" ...): it deprecates the active claim it overlaps.
- **Snapshot vector**: the L2-normalised mean of its messages' stored vectors (no re-embedding),
  computed again when the snapshot is read (``store.load_snapshots``), never stored.
- With an LLM (``env.llm`` not ``none``), ``llm_claims`` asks for claims as structured output
  and falls back to the sentences above on any provider error.
"""

from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import replace

import numpy as np
from pydantic import BaseModel

from . import dates
from . import text as tx
from ...storage.rows import Source
from ..model_bounds import most_claims
from .rows import Claim, Snapshot

log = logging.getLogger(__name__)

_SENT = re.compile(r"(?<=[.!?\]])\s+(?=[\"'(\[A-Z0-9])|\s+(?=\[)|\n+")
STATE = {
    "residence": re.compile(r"\b(live|lives|living|lived|moved|move|moving|relocat\w*)\b"),
    "job": re.compile(r"\b(work(?:s|ing|ed)? (?:at|for|as)|job (?:at|as)|hired|employed|new job)\b"),
    "study": re.compile(r"\b(stud(?:y|ying|ies) at|enrolled|majoring|student at)\b"),
    "relationship": re.compile(r"\b(dating|married|engaged|divorced|single"
                               r"|my (?:boyfriend|girlfriend|partner))\b"),
}
END = re.compile(r"\b(no longer|not anymore|any ?more|quit|stopped|broke up|sold|left my|moved out|"
                 r"passed away|gave up|ended|lost my)\b")


# A claim *states a value* of its slot (``revisions.py``) when its sentence says so in the first
# person: "I" or "we", then only auxiliaries and adverbs ("I've just", "we no longer"), then the
# verb ("I live in", "we moved to"), or "my job at", "my partner"; for where one lives and whom
# one is with, the value must be a name (a capitalised word within its first two). So "my cousin
# moved to", "live music", "my sister's partner", "I think she's dating", "I'm off work for
# today" and "I'm dating a guy" state nothing. General English, matched without regard to case.
_GAP = ("just|finally|recently|now|still|currently|also|actually|already|officially|really|"
        "have|had|been|am|was|were|are|will|do|don't|not|no|longer")
_I = rf"\b(?:i|we)(?:'m|'ve|'d|'ll)?(?:\s+(?:{_GAP}))*\s+"
CHANGES = {
    "residence": re.compile(_I + r"(?:live[sd]?|living|moved|moving|relocated|settled)\s+"
                            r"(?:back\s+)?(?:in|to|into|near)\b", re.IGNORECASE),
    "job": re.compile(_I + r"(?:work(?:s|ing|ed)?\s+(?:at|for|as)|started\s+(?:working\s+)?"
                      r"(?:at|as)|(?:got|was|been)\s+hired\s+(?:at|by|as)|quit)\b|"
                      r"\bmy (?:new )?job (?:at|as)\b", re.IGNORECASE),
    "study": re.compile(_I + r"(?:stud(?:y|ying|ied)|enrolled)\s+at\b|\bi'?m a student at\b",
                        re.IGNORECASE),
    "relationship": re.compile(_I + r"(?:dating|married\s+to|engaged\s+to|seeing)\b|"
                               r"\bmy (?:boyfriend|girlfriend|partner|husband|wife|fianc[eé]e?)\b"
                               r"(?!')", re.IGNORECASE),
}
NAMED = {"residence", "relationship"}   # values that must be names
# a value said of the past ("I lived in", "before that I worked at", "I was dating") can be
# superseded, but is never the current one
_PAST = re.compile(r"\b(?:lived|worked|studied|was|were|had|used)\b", re.IGNORECASE)


def stated(sentence: str, slot: str) -> tuple[tuple[str, ...], bool] | None:
    """The value a claim of ``slot`` (``subject|predicate``) states, and whether it is said of
    the past (``_PAST``): the content stems of the (at most) four words after the pattern ("I
    live in *Ghent, close to the* old harbour" -> ghent, close); None when it states none."""
    pred = slot.rsplit("|", 1)[-1]
    rx = CHANGES.get(pred)
    text = sentence.replace("\u2019", "'")
    m = rx.search(text) if rx else None
    if m is None:
        return None
    words = text[m.end():].split()[:4]
    if pred in NAMED and not any(w[:1].isupper() for w in words[:2]):
        return None
    return tuple(tx.tokens(" ".join(words))), bool(_PAST.search(m.group(0)))


_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|my|me|mine|we|our|us)\b", re.IGNORECASE)


_FIRST = object()


def hid(prefix: str, *parts: str) -> str:
    return prefix + "_" + hashlib.sha1("\x1f".join(parts).encode()).hexdigest()[:16]


HOST_USER = "user"   # the speaker a host gives its user's messages (tools/remember.py)


def opener_of(rows: list[Source]) -> str | None:
    """Who opens the exchanges of a session whose messages are ``rows`` (all of them, ordered by
    seq): the host's user if any message is theirs, else the first speaker."""
    if any((r.speaker or "").strip().casefold() == HOST_USER for r in rows):
        return next(r.speaker for r in rows
                    if (r.speaker or "").strip().casefold() == HOST_USER)
    return rows[0].speaker if rows else None


def exchanges(rows: list[Source], opener=_FIRST) -> list[list[Source]]:
    """Group a session's messages (ordered by seq) into exchanges (see the module docstring).
    ``opener``: the speaker who opens exchanges (default: ``opener_of(rows)``)."""
    out: list[list[Source]] = []
    if opener is _FIRST:
        opener = opener_of(rows)
    for r in rows:
        cur = out[-1] if out else None
        replied = cur is not None and any(x.speaker != opener for x in cur)
        if cur is None or (r.speaker == opener and (replied or opener is None or
                                                    all(x.speaker == opener for x in cur))):
            out.append([r])
        else:
            cur.append(r)
    return out


def sentences(text: str) -> list[str]:
    out = []
    for s in _SENT.split(text):
        s = s.strip()
        if len(tx.tokens(s)) >= 2:
            out.append(s)
    return out


def subject_of(sentence: str, speaker: str | None, names: list[str]) -> str:
    if _FIRST_PERSON.search(sentence):
        return speaker or "someone"
    first = sentence.split()[0].strip(",.!?'\"") if sentence.split() else ""
    for n in names:
        if n.split()[0] == first.replace("'s", ""):
            return n
    return speaker or "someone"


def slot_of(sentence: str, subject: str) -> str | None:
    low = sentence.lower()
    for pred, rx in STATE.items():
        if rx.search(low):
            return f"{subject.lower()}|{pred}"
    return None


def make_claim(row: Source, k: int, sentence: str, when) -> Claim:
    names = tx.named_entities(sentence)
    subj = subject_of(sentence, row.speaker, names)
    ts = row.timestamp or when
    return Claim(hid("clm", row.id, str(k), sentence), text=sentence,
                 speaker=row.speaker or "", subject=subj, source_id=row.id,
                 ref=row.ref or "", session_id=row.session_id,
                 timestamp=ts.isoformat() if ts is not None else "",
                 names=names, heads=tx.noun_heads(sentence), facets=tx.facets(sentence),
                 dates=dates.resolve(sentence, when or ts), slot=slot_of(sentence, subj) or "",
                 ends=bool(END.search(sentence.lower())))


def claims_of(row: Source, when) -> list[Claim]:
    return [make_claim(row, k, s, when) for k, s in enumerate(sentences(row.text))]


class _LLMClaim(BaseModel):
    message_index: int
    text: str
    subject: str = ""
    state: str = ""        # residence | job | study | relationship | "" (not a changeable state)
    ends_state: bool = False


class _LLMClaims(BaseModel):
    claims: list[_LLMClaim]


def llm_claims(llm, rows: list[Source], when) -> list[Claim] | None:
    """Claims of one exchange from the LLM's structured output, the first of each message's as
    many as its size allows (``model_bounds``); None on any provider failure."""
    lines = "\n".join(f"[{i}] {r.speaker or '?'}: {r.text}" for i, r in enumerate(rows))
    try:
        got = llm.structured(
            "Extract atomic, self-contained factual claims from this dialogue exchange. Quote "
            "facts faithfully; give each the index of the message it comes from.", lines, _LLMClaims)
    except Exception:  # any provider failure: the deterministic extractor takes over
        log.warning("LLM claim extraction failed; using sentences", exc_info=True)
        return None
    out, per_message, dropped = [], [0] * len(rows), 0
    for k, c in enumerate(got.claims):
        if not (0 <= c.message_index < len(rows)) or not c.text.strip():
            continue
        if per_message[c.message_index] >= most_claims(rows[c.message_index]):
            dropped += 1
            continue
        per_message[c.message_index] += 1
        cl = make_claim(rows[c.message_index], 1000 + k, c.text.strip(), when)
        subject = c.subject or cl.subject
        out.append(replace(cl, subject=subject, ends=c.ends_state,
                           slot=f"{subject.lower()}|{c.state}" if c.state else cl.slot))
    if dropped:
        log.warning("a model's answer held %d claims more than the size of the messages they "
                    "cite allows; kept the first of each message's", dropped)
    return out


def build_snapshots(session_id: str, rows: list[Source], session_time, vectors: dict,
                    llm=None, opener=_FIRST, idx0: int = 0, dim: int | None = None) -> list[Snapshot]:
    """One snapshot per exchange of ``rows`` (ordered by seq): the whole session, or the messages
    appended to it since its last curation (then ``opener`` is the session's first speaker and
    ``idx0`` the number of its earlier exchanges). ``dim``: the model's vector size, for an
    exchange none of whose messages has a vector (default: the size of those in ``vectors``)."""
    dim = dim or next((len(v) for v in vectors.values()), None)
    snaps = []
    for idx, ex in enumerate(exchanges(rows, opener), start=idx0):
        when = session_time or ex[0].timestamp
        claims = llm_claims(llm, ex, when) if llm is not None else None
        if claims is None:
            claims = [c for r in ex for c in claims_of(r, when)]
        v = snapshot_vector([r.id for r in ex], vectors, dim)
        snaps.append(Snapshot(
            hid("snp", session_id, ex[0].id), session_id=session_id,
            seq=int(ex[0].seq or 0), idx=idx,
            timestamp=ex[0].timestamp or session_time, session_time=session_time,
            speakers=sorted({r.speaker or "" for r in ex}),
            source_ids=[r.id for r in ex], refs=[r.ref or "" for r in ex],
            text="\n".join(f"{r.speaker or '-'}: {r.text}" for r in ex), claims=claims,
            names=sorted({n for c in claims for n in c.names}),
            heads=sorted({h for c in claims for h in c.heads}),
            facets=sorted({f for c in claims for f in c.facets}), vector=v))
    return snaps


def snapshot_vector(source_ids: list[str], vectors: dict, dim: int | None) -> np.ndarray:
    """The L2-normalised mean of the stored vectors of ``source_ids`` (in that order), as
    float32: computed alike when a snapshot is made and each time it is read, so it is not
    stored. ``dim``: the size of a zero vector for messages none of which has one."""
    vecs = [vectors[i] for i in source_ids if i in vectors]
    if vecs:
        v = np.mean(vecs, axis=0)
    else:
        assert dim is not None, "an exchange without vectors needs dim"   # np.zeros(None) fails
        v = np.zeros(dim, dtype=np.float32)
    v = v / (np.linalg.norm(v) or 1.0)
    return v.astype(np.float32)
