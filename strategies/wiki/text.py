"""Deterministic text features for the wiki strategy (used when no LLM is configured).

TrajWiki's appendix describes "deterministic scoring features"; the main text only names them.
Our exact choices:

- **Tokens**: lowercase alphanumeric runs, minus a stop list, folded by a crude suffix stemmer
  (``-ing``, ``-ed``, ``-es``, ``-s``, ``-ly`` stripped when at least 3 letters remain). Used for
  the lexical terms of compatibility g and page routing S_p, and for facet matching.
- **Facets**: fixed keyword lists (below), matched on stems. A claim's facets are every list one
  of its stems hits. The categories follow the activity categories of the American Time Use
  Survey Activity Lexicon (U.S. Bureau of Labor Statistics; e.g. "Household activities", "Work
  and work-related activities", "Education", "Consumer purchases", "Eating and drinking",
  "Socializing, relaxing, and leisure", "Sports, exercise, and recreation", "Religious and
  spiritual activities", "Volunteer activities", "Traveling", "Caring for animals and pets"),
  plus English kinship and relationship terms. Each list holds the category's own words and
  generic words for it, never a particular item (a kind of animal, craft, instrument or
  group): ``tests/test_no_benchmark_vocabulary.py`` keeps words that belong to one development
  conversation out, and ``bench/vocab_audit.py`` lists the candidates.
- **Named entities**: runs of capitalised words (possessive ``'s`` dropped), skipping capitalised
  sentence starters / interjections in ``NOT_NAMES``; all-caps acronyms count.
- **Noun phrases**: the one- or two-word phrase after a determiner or possessive ("my new puppy"),
  reduced to its head noun ("puppy") unless the head is generic (``GENERIC``). Heads that recur
  in at least two snapshots become "thing" entities when pages are built (the paper's "repeated
  noun phrases").
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import LiteralString

STOP = set("""a an the and or but of to in on at for with by from is are was were be been being it its
this that these those he she they them his her their i you we my your our as not no do did does
has have had so if than then there what when where who whom which how me him us am im ive youre
just really very too also about into over out up down off can could would should will shall may
might must oh yeah yes hey hi hello thanks thank wow lol ok okay sure all any some more most such
only own same other again once here why because while during before after above below until
get got getting go going went gone make made know think thought feel felt like love lot lots
much many well still even ever now thats dont didnt cant wont id ill youve theyre weve whats
one two way thing things something anything everything nothing someone anyone everyone""".split())

NOT_NAMES = set("""I I'm I've I'd I'll Im Ive Hey Hi Hello Wow Oh Yeah Yes No Thanks Thank The A An
And But So That This These Those It It's Its My Your Our Their His Her We We're They You You're
What When Where Who Why How Which Well Great Awesome Sure Okay OK Sounds Congrats Congratulations
Glad Good Nice Cool Amazing Absolutely Totally Definitely Really Just Also Anyway Haha Lol Aw Aww
Sorry Love Thats Let Let's Have Has Had Do Does Did Is Are Was Were Be Can Could Would Should Will
Not Maybe Yep Nope Omg Ah Hmm Me Mine Take Keep Look See Check Hope Agreed Exactly True Right
Speaking Talking Being Having Last Next Today Tomorrow Yesterday Tonight There Here Then Now
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June
July August September October November December Mom Dad Mum""".split())

GENERIC = set("""time times thing things lot bit way ways day days week weeks year years moment
moments idea ideas kind sort part chance place people person experience stuff one ones something
lots while point life world feeling feelings end start side number reason work fun""".split())

FACETS: dict[str, list[LiteralString]] = {
    "family": "family kid kids child children son daughter mom mother dad father parent sister "
              "brother sibling wife husband grandma grandmother grandpa grandfather baby cousin "
              "aunt uncle niece nephew".split(),
    "relationship": "boyfriend girlfriend partner married marriage wedding divorce dating "
                    "single engaged breakup romance spouse fiance".split(),
    "friends": "friend friends friendship buddy neighbor neighbour roommate".split(),
    "work": "work job career office boss colleague coworker business company startup client "
            "promotion hired fired salary shift manager interview employer employed "
            "profession".split(),
    "education": "school college university class course study degree exam teacher student "
                 "graduate graduation homework lesson workshop certification research "
                 "scholarship".split(),
    "home": "home house apartment move moved moving live living rent neighborhood city "
            "relocate relocated hometown household".split(),
    "travel": "trip travel traveled vacation holiday flight visit visited abroad tour journey "
              "country road".split(),
    "outdoors": "camping camp hike hiking trail park beach mountain forest lake nature outdoor "
                "outdoors garden gardening".split(),
    "art": "art arts artist craft crafts paint painting draw drawing photography gallery museum "
           "exhibit exhibition".split(),
    "music": "music musical song songs sing singing band concert album instrument "
             "musician".split(),
    "media": "book books read reading novel author library movie movies film show series "
             "podcast poem poetry writing story stories blog television".split(),
    "sports": "sport sports run running race gym yoga swim swimming soccer football basketball "
              "baseball tennis hockey workout exercise bike biking cycling "
              "fishing team game games match tournament".split(),
    "pets": "pet pets dog dogs cat cats puppy kitten animal animals vet".split(),
    "food": "food cook cooking bake baking recipe dinner lunch breakfast restaurant cafe eat "
            "eating drink drinking meal dish".split(),
    "health": "health doctor hospital sick ill injury injured pain surgery therapy therapist "
              "medicine medication diet stress anxiety accident".split(),
    "community": "volunteer volunteering charity donate donation fundraising community "
                 "nonprofit civic vote voting".split(),
    "religion": "religion religious church faith pray prayer worship spiritual".split(),
    "events": "party festival conference ceremony celebration celebrate birthday event "
              "meetup reunion anniversary competition contest".split(),
    "money": "money buy bought purchase shop shopping sale savings budget car".split(),
    "plans": "plan plans planning goal goals dream dreams future hope someday".split(),
}

# Facets whose claims are list-like or countable: they get inventory pages.
INVENTORY_FACETS = ("art", "music", "media", "sports", "pets", "food", "travel", "outdoors",
                    "events", "family", "community", "education", "work", "home", "friends",
                    "health", "money", "plans", "religion", "relationship")

_WORD = re.compile(r"[a-z0-9]+")
_CAP = re.compile(r"\b([A-Z][A-Za-z0-9&\-]*(?:'s)?(?:\s+(?:of\s+|the\s+|de\s+|and\s+)?"
                  r"[A-Z][A-Za-z0-9&\-]*(?:'s)?)*)")
_NP = re.compile(r"\b(?:my|your|his|her|our|their|a|an|the|this|that|some|new)\s+"
                 r"([a-z]+(?:\s+[a-z]+)?)\b")


@lru_cache(maxsize=65536)   # a pure function of the word, asked for the same few words per recall
def stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "ly", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def tokens(text: str) -> list[str]:
    """Content stems of ``text`` (stop words dropped), in order."""
    return list(_tokens(text))


@lru_cache(maxsize=16384)   # each recall tokenizes the same candidate turns again
def _tokens(text: str) -> tuple[str, ...]:
    return tuple(stem(w) for w in _WORD.findall(text.lower().replace("'", "")) if w not in STOP)


_FACET_STEMS = {f: {stem(w) for w in ws} for f, ws in FACETS.items()}


def facets(text: str) -> list[str]:
    st = set(tokens(text))
    return sorted(f for f, ws in _FACET_STEMS.items() if st & ws)


def named_entities(text: str) -> list[str]:
    """Capitalised word runs, possessives dropped, sentence starters filtered."""
    out: list[str] = []
    for m in _CAP.finditer(text):
        runs, cur = [], []
        for w in m.group(1).split():      # a possessive ends a run: "Ana's Book Club"
            cur.append(w[:-2] if w.endswith("'s") else w)
            if w.endswith("'s"):
                runs.append(cur)
                cur = []
        runs.append(cur)
        for words in runs:
            while words and words[0] in NOT_NAMES:
                words = words[1:]
            while words and words[-1].lower() in ("of", "the", "de", "and"):
                words = words[:-1]
            if not words or (len(words) == 1 and (len(words[0]) < 2 or words[0] in NOT_NAMES)):
                continue
            name = " ".join(words)
            if name not in out:
                out.append(name)
    return out


def noun_heads(text: str) -> list[str]:
    """Head nouns of determiner/possessive phrases, generic heads dropped."""
    out = []
    for m in _NP.finditer(text.lower()):
        head = m.group(1).split()[-1]
        if head in STOP or head in GENERIC or len(head) < 3:
            head = m.group(1).split()[0]
            if head in STOP or head in GENERIC or len(head) < 3:
                continue
        h = stem(head)
        if h not in out:
            out.append(h)
    return out


def jaccard(a, b) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a and b else 0.0


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "x"
