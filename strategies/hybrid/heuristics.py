"""Deterministic curation, used when neither the host nor an LLM curated a session.

Episodes (appendix A without a model): a session is cut into topical segments, TextTiling-style
on the turns' own embeddings: at each gap between turns, the cosine between the mean vector of
the ``WINDOW`` turns before and after it; a gap is a boundary where that similarity is a local
minimum lower than mean - 0.5 sd of the session's gaps, with segments of ``MIN_SEG``..``MAX_SEG``
turns. Each segment becomes an episode: a title of its most frequent content words, an extractive
summary (the ``SUMMARY_SENTENCES`` sentences closest to the segment's centroid) and narrative
details (every informative sentence, first person rewritten to the speaker's name, relative dates
resolved), capped at ``MAX_DETAILS`` characters by dropping the least central sentences.

Tuples (appendix B without a model): one per informative sentence, subject = the speaker, relation
= the verb after the speaker's name once first person is rewritten ("I went" -> "Ana went"),
object = the rest of the sentence with dates resolved; a sentence without such a verb becomes
(speaker, "said", sentence). The source context is the turn itself. "Informative": at least
``MIN_CONTENT`` content words, so greetings and acknowledgements make no tuples.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from ..speakers import addressee
from .dates import resolve
from .items import Episode, Fact
from ...storage.rows import Source

WINDOW, MIN_SEG, MAX_SEG = 3, 4, 14
SUMMARY_SENTENCES, MAX_DETAILS, MIN_CONTENT = 2, 1500, 3
STOP = set("""a an the and or but of to in on at for with by from is are was were be been being it its
this that these those he she they them his her their i you we my your our me us as not no so if than
then there what when where who which how just really very too also oh wow yeah yes hey hi hello thanks
thank lol haha ok okay sure great good nice awesome cool amazing glad love lot much can could would should
will do did does doing done has have had get got go going know think feel like well all some any more
s t m re ve ll d that's it's i'm i've i'll don't can't im one thing things way sounds""".split())
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")
_FIRST_WORDS = [
    (r"\bI'm\b", "{S} is"), (r"\bI am\b", "{S} is"), (r"\bI've\b", "{S} has"),
    (r"\bI have\b", "{S} has"), (r"\bI'll\b", "{S} will"), (r"\bI'd\b", "{S} would"),
    (r"\bI was\b", "{S} was"), (r"\bI\b", "{S}"), (r"\bmyself\b", "{S}"), (r"\bmy\b", "{S}'s"),
    (r"\bMy\b", "{S}'s"), (r"\bmine\b", "{S}'s"), (r"\bme\b", "{S}"),
    (r"\byour\b", "{O}'s"), (r"\bYour\b", "{O}'s"), (r"\byou're\b", "{O} is"),
    (r"\bYou're\b", "{O} is"), (r"\byou\b", "{O}"), (r"\bYou\b", "{O}"),
]
_FIRST = [(re.compile(p), r) for p, r in _FIRST_WORDS]
_AUX = {"is", "was", "has", "had", "will", "would", "can", "could", "just", "also", "really",
        "recently", "finally", "actually", "still", "never", "always", "did", "been", "am"}


def content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z][a-z0-9']+", text.lower()) if w not in STOP and len(w) > 2]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s.strip()]


def third_person(sentence: str, speaker: str | None, other: str | None) -> str:
    """First and second person rewritten to names ("I went" -> "Ana went")."""
    if not speaker:
        return sentence
    out = sentence
    for rx, rep in _FIRST:
        if "{O}" in rep and not other:
            continue
        out = rx.sub(rep.replace("{S}", speaker).replace("{O}", other or ""), out)
    return out


def split_relation(sentence: str, speaker: str) -> tuple[str, str]:
    """(relation, object) of a third-person sentence about ``speaker``."""
    m = re.search(rf"\b{re.escape(speaker)}\b(?!'s)\s+(.*)", sentence)
    if not m:
        return "said", sentence
    words = m.group(1).split()
    rel = []
    while words and words[0].lower().strip(",") in _AUX and len(rel) < 3:
        rel.append(words.pop(0))
    if words:
        rel.append(words.pop(0))
    if words and words[0].lower() in ("to", "up", "out", "in", "on", "about", "for", "with", "at"):
        rel.append(words.pop(0))
    obj = " ".join(words).rstrip(".!?") or "(unspecified)"
    return " ".join(rel).strip(",") or "said", obj


def other_speaker(turns: list[Source], speaker: str | None) -> str | None:
    names = Counter(t.speaker for t in turns if t.speaker and t.speaker != speaker)
    return names.most_common(1)[0][0] if names else None


def turn_tuples(turn: Source, other: str | None, when) -> list[Fact]:
    """The tuples of one turn (``when``: the session time, to resolve relative dates)."""
    speaker = turn.speaker or "someone"
    out = []
    for sent in sentences(turn.text):
        if len(content_words(sent)) < MIN_CONTENT:
            continue
        rewritten, dates = resolve(third_person(sent, speaker, other), when)
        rel, obj = split_relation(rewritten, speaker)
        text = rewritten if rel != "said" else f"{speaker} said: {rewritten}"
        out.append(Fact(subject=speaker, relation=rel, object=obj, context=turn.text,
                        dates=dates, text=text, source_ids=[turn.id], refs=[turn.ref or turn.id]))
    return out


def segment(vectors: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) turn ranges of topical segments (see the module docstring)."""
    n = len(vectors)
    if n <= MIN_SEG * 2:
        return [(0, n)] if n else []
    gaps = []
    for g in range(1, n):
        a = vectors[max(0, g - WINDOW):g].mean(axis=0)
        b = vectors[g:g + WINDOW].mean(axis=0)
        gaps.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-9)))
    sims = np.asarray(gaps)
    cut_below = sims.mean() - 0.5 * sims.std()
    cuts, start = [], 0
    for g in range(1, n):
        s = sims[g - 1]
        local_min = s <= sims[max(0, g - 2)] and s <= sims[min(len(sims) - 1, g)]
        long_enough = g - start >= MIN_SEG and n - g >= MIN_SEG
        if long_enough and ((local_min and s < cut_below) or g - start >= MAX_SEG):
            cuts.append((start, g))
            start = g
    cuts.append((start, n))
    return cuts


def title_of(texts: list[str], k: int = 4) -> str:
    counts = Counter(w for t in texts for w in content_words(t))
    return ", ".join(w for w, _ in counts.most_common(k)) or "conversation"


def episode_of(turns: list[Source], vectors: np.ndarray, when, speakers: list[str],
               to: dict[str, str | None] | None = None) -> Episode:
    """One episode from a segment's turns (with their vectors); ``to``: turn id -> the person
    it speaks to (``speakers.addressee``; default: the first other speaker)."""
    centroid = vectors.mean(axis=0)
    centrality = vectors @ centroid
    scored = []
    for k, t in enumerate(turns):
        other = (to.get(t.id) if to is not None
                 else next((s for s in speakers if s != t.speaker), None))
        for sent in sentences(t.text):
            if len(content_words(sent)) < MIN_CONTENT:
                continue
            rewritten, _ = resolve(third_person(sent, t.speaker, other), when)
            if t.speaker and t.speaker not in rewritten:
                rewritten = f"{t.speaker}: {rewritten}"
            scored.append((k, float(centrality[k]), rewritten))
    if not scored:
        scored = [(k, float(centrality[k]), f"{t.speaker or '-'}: {t.text}")
                  for k, t in enumerate(turns)]
    by_centre = sorted(range(len(scored)), key=lambda i: -scored[i][1])
    summary = " ".join(scored[i][2] for i in sorted(by_centre[:SUMMARY_SENTENCES]))
    keep, size = set(), 0
    for i in by_centre:
        if size + len(scored[i][2]) + 1 > MAX_DETAILS and keep:
            continue
        keep.add(i)
        size += len(scored[i][2]) + 1
    details = " ".join(scored[i][2] for i in sorted(keep))
    names = " & ".join(speakers[:3])
    return Episode(title=f"{names}: {title_of([t.text for t in turns])}" if names
                   else title_of([t.text for t in turns]),
                   summary=summary, details=details, source_ids=[t.id for t in turns],
                   refs=[t.ref or t.id for t in turns])


def curate_session(turns: list[Source], vectors: dict[str, np.ndarray], when,
                   dim: int | None = None) -> tuple[list[Episode], list[Fact]]:
    """(episodes, tuples) of a session's turns (source rows ordered by seq); each carries the
    ``source_ids`` and ``refs`` of the turns it came from. ``dim``: the model's vector size, for
    turns without a vector (default: the size of those in ``vectors``)."""
    if not turns:
        return [], []
    speakers = [s for s, _ in Counter(t.speaker for t in turns if t.speaker).most_common()]
    order = [t.speaker for t in turns]
    to = {t.id: addressee(order, i) for i, t in enumerate(turns)}   # "you" is whom a turn answers
    dim = dim or next((len(v) for v in vectors.values()), None)
    assert dim is not None, "curate_session needs dim or vectors"   # np.zeros(None) fails anyway
    mat = np.stack([vectors.get(t.id, np.zeros(dim, np.float32)) for t in turns])
    episodes = [episode_of(turns[a:b], mat[a:b], when, speakers, to) for a, b in segment(mat)]
    tuples = [tup for t in turns for tup in turn_tuples(t, to[t.id], when)]
    return episodes, tuples
