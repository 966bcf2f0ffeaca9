"""A question that names a calendar day or month: that period's turns get a vote of their own.

"What did we decide on 24.01.2024?", "What setback did she face in October 2023?": the date
says where the evidence is, but none of the voters reads it — BM25 and the embedding see "24",
"01" and "2024" as words, and the host did not send ``since``/``until``. So ``auto`` searches
the named period's turns apart (the same turn search as ``plain``, within the period) and fuses
that ranking as one more list, weighted ``W_DATED`` like one voter. It is a vote, not a filter:
a question that says "on 3 June" about something said a day later still finds it through the
other lists, and a period with no turns adds nothing.

Which periods (``periods_named``), choices the rule needs:

- days: ISO ``2024-01-24``; numeric ``24.01.2024`` / ``24/01/24`` (day first, the usual reading
  with dots; when both readings are valid dates and the separator is ``/``, both days are
  searched); ``24 January 2024``, ``24th of January, 2024``, ``the 24 of January``;
  ``January 24, 2024``, ``Jan 24th``. Month names are English (``calendar``).
- months (not part of a day): ``in|during|throughout [early|mid|late] <Month> [<year>]`` and
  ``<Month> <year>``. A year-less month name must be capitalised ("in may" is a verb).
- a day or month without a year is the latest one on or before the namespace's latest session
  (memory is asked about the past); with no session time, relative to today.
- relative days and periods ("yesterday", "today", "3 days ago", "last week", "last weekend",
  "on Friday", "last month") count back from the present, by ``wiki/dates.py``'s rules: a
  person asking "what did we say yesterday?" means the day before today, whatever was stored
  last. Not when the question also has a calendar date ("on Friday before 10.01.2024" counts
  from that date, which this rule does not resolve), nor relative years and seasons (too wide
  to point anywhere).
- a date right after ``before``, ``after``, ``since``, ``until``, ``till``, ``by`` or
  ``prior to`` bounds a period rather than naming one, so it is not searched.
- at most ``MAX_PERIODS`` periods (the first named).

A period is the stored timestamps' calendar day or month (UTC unless the host stored offsets).
``W_DATED`` = 1 (one voter's weight) was the best of 0.5 / 1 / 2 on both development sets at
2,000 tokens, with each conversation left out in turn (bench/README.md, "What is in-sample").
"""

from __future__ import annotations

import calendar
import re
from dataclasses import replace
from typing import Callable
from datetime import date, datetime, time, timedelta, timezone

from ..base import Env, RecallRequest
from ..search import TurnSearch, search_turns
from ..wiki import dates as wiki_dates

W_DATED = 1.0
MAX_PERIODS = 3
RELATIVE_GRAINS = ("day", "week", "weekend", "month")
DEPTH = 50   # the period's turns ranked: the voters rank 2x the budget, ~50-90 turns

Period = tuple[str, datetime, datetime]   # ("day:2024-01-24" | "month:2023-10", since, until)

_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
_MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
_MONTHS["sept"] = 9
_M = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_BOUND = re.compile(r"(?<!\w)(?:before|after|since|until|till|by|prior to)\s+(?:the\s+)?$", re.I)
_FORMS = [
    ("iso", re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("num", re.compile(r"\b(\d{1,2})([./])(\d{1,2})\2(\d{4}|\d{2})\b")),
    ("dmy", re.compile(rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_M})\.?(?:,?\s+(\d{{4}}))?\b", re.I)),
    ("mdy", re.compile(rf"\b({_M})\.?\s+(\d{{1,2}}){_ORD}(?:,?\s+(\d{{4}}))?\b(?!:)", re.I)),
    ("month", re.compile(rf"(?:\b(?:in|during|throughout)\s+(?:early\s+|mid-?|late\s+)?)?"
                         rf"\b({_M})\b(?:,?\s+(\d{{4}}))?(?![\d:])", re.I)),
]


def _date(y: int | None, m: int, d: int, ref: date) -> date | None:
    """The date; a year-less one is the latest on or before ``ref``."""
    try:
        if y is not None:
            return date(y, m, d)
        day = date(ref.year, m, d)
        return day if day <= ref else date(ref.year - 1, m, d)
    except ValueError:   # 31 February, month 13, 29 February of a year without it
        return None


def _day(d: date) -> Period:
    start = datetime.combine(d, time(0), timezone.utc)
    return f"day:{d.isoformat()}", start, start + timedelta(days=1, microseconds=-1)


def _month(y: int, m: int) -> Period:
    start = datetime(y, m, 1, tzinfo=timezone.utc)
    end = datetime(y + (m == 12), m % 12 + 1, 1, tzinfo=timezone.utc)
    return f"month:{y}-{m:02d}", start, end - timedelta(microseconds=1)


def _periods(kind: str, g: tuple, text: str, ref: date) -> list[Period]:
    if kind == "month":
        month = _MONTHS[g[0].lower()]
        if g[1]:
            return [_month(int(g[1]), month)]
        if not (g[0][0].isupper() and text.lstrip().split()[0].lower() in ("in", "during",
                                                                          "throughout")):
            return []   # a bare month name, or "in may" (a verb)
        return [_month(ref.year if month <= ref.month else ref.year - 1, month)]
    if kind == "iso":
        days = [_date(int(g[0]), int(g[1]), int(g[2]), ref)]
    elif kind == "num":
        a, b, y = int(g[0]), int(g[2]), int(g[3]) + (2000 if len(g[3]) == 2 else 0)
        days = [_date(y, b, a, ref)] + ([_date(y, a, b, ref)] if g[1] == "/" and a != b else [])
    elif kind == "dmy":
        days = [_date(int(g[2]) if g[2] else None, _MONTHS[g[1].lower()], int(g[0]), ref)]
    else:
        days = [_date(int(g[2]) if g[2] else None, _MONTHS[g[0].lower()], int(g[1]), ref)]
    return [_day(d) for d in days if d is not None]


def _relative(query: str, today: date) -> list[tuple[int, Period]]:
    """"yesterday", "last week", "3 days ago", "on Friday"...: resolved against ``today``
    (``wiki/dates.py``'s rules), periods of a month at most."""
    out = []
    low = query.lower()
    for sp in wiki_dates.resolve(query, today, kinds=wiki_dates.RELATIVE):
        at = low.find(sp["text"])
        if sp["grain"] not in RELATIVE_GRAINS or _BOUND.search(query[:max(at, 0)]):
            continue
        a, b = date.fromisoformat(sp["start"]), date.fromisoformat(sp["end"])
        key = f"day:{a.isoformat()}" if a == b else f"days:{a.isoformat()}..{b.isoformat()}"
        since = datetime.combine(a, time(0), timezone.utc)
        out.append((at, (key, since, _day(b)[2])))
    return out


def periods_named(query: str, latest: datetime | Callable[[], datetime | None] | None = None,
                  now: datetime | None = None) -> list[Period]:
    """The days and months ``query`` names (see the module docstring), in the order named, at
    most ``MAX_PERIODS``; relative ones ("yesterday") are counted back from ``now``. ``latest``
    (the namespace's latest session time, or a function reading it) is read only when the
    query has a date."""
    now = now or datetime.now(timezone.utc)
    hits: list[tuple[str, re.Match]] = []
    taken: list[tuple[int, int]] = []
    for kind, rx in _FORMS:   # days before months: a month inside a day is that day's
        for m in rx.finditer(query):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append(m.span())
            if not _BOUND.search(query[:m.start()]):
                hits.append((kind, m))
    last = latest() if callable(latest) and hits else latest
    ref = (last if isinstance(last, datetime) else now).date()
    found: list[tuple[int, Period]] = []
    for kind, m in hits:
        try:
            found += [(m.start(), p) for p in _periods(kind, m.groups(), m.group(0), ref)]
        except (OverflowError, ValueError):   # December 9999: its end is past datetime's
            continue
    if not taken:   # "on Friday before 10.01.2024" counts from that date, not from today
        found = _relative(query, now.date())
    out: list[Period] = []
    for _, p in sorted(found, key=lambda x: x[0]):
        if p[0] not in (q[0] for q in out):
            out.append(p)
    return out[:MAX_PERIODS]


def period_rankings(env: Env, request: RecallRequest, periods: list[Period],
                    qv) -> dict[str, list[str]]:
    """For each period: its turns (within the request's own window too) ranked by the same
    turn search as ``plain``, under the period's key; a period with no turns is left out."""
    out = {}
    for key, since, until in periods:
        if request.since is not None:
            since = max(since, request.since)
        if request.until is not None:
            until = min(until, request.until)
        if since > until:
            continue
        sub = replace(request, since=since, until=until, ranking_only=True)
        order, _ = search_turns(env, sub, DEPTH, turns=TurnSearch(env, sub, DEPTH, qv))
        if order:
            out[key] = order
    return out
