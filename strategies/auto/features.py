"""Observable query features, and the kind of question they point to.

Cheap (regular expressions, no model): ``auto`` computes them on every recall. The kinds follow
the question types a memory server is asked, which LoCoMo's categories also name:

* ``temporal`` — asks for a time ("when", "how long ago", "what year", a date in the question);
* ``hypothetical`` — asks for an inference beyond what was said ("would", "might", "likely");
* ``list`` — asks for several things, or a count ("which cities has", "how many", "both");
* ``multi`` — names two or more people/things (relational);
* ``single`` — everything else (one fact about one subject).

A question gets the first kind that matches, in that order. A kind may have its own fusion
weights in ``fitted.py`` (``bench/fit_auto.py`` decides by leaving each dev conversation out);
kinds without share the fit's ``*`` weights.
"""

from __future__ import annotations

import re

KINDS = ("temporal", "hypothetical", "list", "multi", "single")

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
TEMPORAL = re.compile(
    r"^\s*when\b|\bwhat (year|month|day|date|time|week)\b|\bhow long\b|\bago\b|\bsince when\b|"
    r"\b(in|on|during|before|after) (\d{1,2} )?(" + _MONTHS + r")\b|\b(19|20)\d\d\b|"
    r"\b(last|next|previous) (week|month|year|weekend|summer|winter|spring|fall)\b", re.I)
HYPOTHETICAL = re.compile(
    r"^\s*(would|could|might|is it likely|does .* seem)\b|\b(would|might|likely|probably|"
    r"possibly|considered|potential(ly)?|if (she|he|they|i) (had|were|did))\b", re.I)
LIST = re.compile(
    r"\bhow many\b|\bboth\b|\b(names|kinds|types|list) of\b|\ball (the )?\w+s\b|"
    r"^\s*(what|which) (\w+ ){0,2}\w+s (has|have|did|does|do|are|were)\b|"
    r"^\s*what are\b|\bin common\b", re.I)
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][a-z]+(?:'s)?)\b")
_NOT_NAMES = {"I", "What", "When", "Where", "Who", "Which", "How", "Why", "Would", "Could", "Did",
              "Does", "Do", "Is", "Are", "Was", "Were", "The", "A", "An", "In", "On", "Has", "Have"}


def names(query: str) -> list[str]:
    """Capitalised words past the first word, "'s" removed (people, places, titles)."""
    out = []
    for m in _NAME.finditer(query):
        w = m.group(1).removesuffix("'s")
        if w not in _NOT_NAMES and w not in out and m.start() > 0:
            out.append(w)
    return out


def features(query: str) -> dict:
    q = query.strip()
    f = {"temporal": bool(TEMPORAL.search(q)), "hypothetical": bool(HYPOTHETICAL.search(q)),
         "list": bool(LIST.search(q)), "names": names(q), "words": len(q.split())}
    f["multi"] = len(f["names"]) >= 2
    f["kind"] = next((k for k in KINDS[:-1] if f[k]), "single")
    return f
