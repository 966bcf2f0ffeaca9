"""Relative dates in a claim, resolved against the time of its session.

Each hit becomes ``{"text", "start", "end", "grain"}`` (ISO dates, inclusive range). Choices the
paper leaves open (it only says dates are resolved against session time):

- ``yesterday`` / ``last night`` = session day - 1; ``today``, ``tonight``, ``this morning`` = the
  session day; ``tomorrow`` = + 1; ``the day before yesterday`` = - 2.
- ``N days|weeks|months|years ago`` (N a digit, a number word, ``a``/``an``/``a few``=3/
  ``a couple of``=2): the session day minus N units, grain = that unit (a month is 30 days,
  a year 365 days; the range is a unit-sized span centred on that day).
- ``last week|weekend|month|year|summer...``: the calendar period before the session's
  (weeks run Monday-Sunday; seasons: the most recent finished one of that name).
  ``this ...`` is the current period, ``next ...`` the following one.
- ``last <weekday>`` / ``on <weekday>`` / ``this past <weekday>``: the most recent such day
  strictly before the session day; ``next <weekday>`` the first strictly after.
- ``in <Month> [<year>]``, ``<Month> <year>``: that month (year defaults to the session's);
  ``<day> <Month> [<year>]`` / ``<Month> <day>[, <year>]``: that day; ``in|since <year>``: that year.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
DAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
NUMS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
        "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
        "a few": 3, "a couple of": 2, "a couple": 2, "couple of": 2, "few": 3, "several": 3}
SEASONS = {"spring": (3, 5), "summer": (6, 8), "fall": (9, 11), "autumn": (9, 11), "winter": (12, 2)}
_M = "|".join(MONTHS)
_D = "|".join(DAYS)
_N = (r"\d+|a couple of|a couple|couple of|a few|few|several|an|a"
      r"|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve")

_PATTERNS = [
    ("before_yesterday", re.compile(r"\bthe day before yesterday\b")),
    ("yesterday", re.compile(r"\b(?:yesterday|last night)\b")),
    ("today", re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b")),
    ("tomorrow", re.compile(r"\btomorrow\b")),
    ("ago", re.compile(rf"\b({_N})\s+(day|week|month|year)s?\s+ago\b")),
    ("rel_period", re.compile(r"\b(last|this|next|past)\s+"
                              r"(week|weekend|month|year|spring|summer|fall|autumn|winter)\b")),
    ("rel_day", re.compile(rf"\b(last|next|this past|on|this)\s+({_D})\b")),
    ("day_month", re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_M})(?:,?\s+(\d{{4}}))?\b")),
    ("month_day", re.compile(rf"\b({_M})\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(\d{{4}}))?\b")),
    ("month_year", re.compile(rf"\b(?:in\s+)?({_M})(?:\s+(?:of\s+)?(\d{{4}}))?\b")),
    ("year", re.compile(r"\b(?:in|since|back in|during)\s+((?:19|20)\d\d)\b")),
]


def _span(start: date, end: date, grain: str, text: str) -> dict:
    return {"text": text, "start": start.isoformat(), "end": end.isoformat(), "grain": grain}


def _month_span(y: int, m: int) -> tuple[date, date]:
    return date(y, m, 1), date(y, m, calendar.monthrange(y, m)[1])


def _shift_month(y: int, m: int, k: int) -> tuple[int, int]:
    i = y * 12 + (m - 1) + k
    return i // 12, i % 12 + 1


def _period(which: str, unit: str, d: date) -> tuple[date, date]:
    k = {"last": -1, "past": -1, "this": 0, "next": 1}[which]
    if unit in ("week", "weekend"):
        monday = d - timedelta(days=d.weekday()) + timedelta(weeks=k)
        if unit == "weekend":
            return monday + timedelta(days=5), monday + timedelta(days=6)
        return monday, monday + timedelta(days=6)
    if unit == "month":
        return _month_span(*_shift_month(d.year, d.month, k))
    if unit == "year":
        return date(d.year + k, 1, 1), date(d.year + k, 12, 31)
    spans = [_season(y, unit) for y in (d.year - 2, d.year - 1, d.year, d.year + 1)]
    if which in ("last", "past"):
        return [s for s in spans if s[1] < d][-1]
    if which == "next":
        return [s for s in spans if s[0] > d][0]
    return next((s for s in spans if s[0] <= d <= s[1]), [s for s in spans if s[0] > d][0])


def _season(y: int, name: str) -> tuple[date, date]:
    """The season ``name`` that starts in year ``y`` (winter: December y to February y+1)."""
    lo, hi = SEASONS[name]
    if lo > hi:
        return date(y, 12, 1), date(y + 1, 2, calendar.monthrange(y + 1, 2)[1])
    return date(y, lo, 1), _month_span(y, hi)[1]


RELATIVE = ("before_yesterday", "yesterday", "today", "tomorrow", "ago", "rel_period", "rel_day")


def resolve(text: str, when: datetime | date | None,
            kinds: tuple[str, ...] | None = None) -> list[dict]:
    """Every date expression in ``text`` with its resolved span (empty without ``when``);
    ``kinds``: only these patterns (``RELATIVE``: the ones relative to ``when``)."""
    if when is None:
        return []
    d = when.date() if isinstance(when, datetime) else when
    low = text.lower()
    out, taken = [], []
    for kind, rx in _PATTERNS:
        if kinds is not None and kind not in kinds:
            continue
        for m in rx.finditer(low):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            try:
                hit = _one(kind, m, d)
            except (OverflowError, ValueError, IndexError):   # beyond year 1..9999
                hit = None
            if hit is not None:
                taken.append((m.start(), m.end()))
                out.append(_span(*hit, m.group(0)))
    return out


def _one(kind: str, m: re.Match, d: date):
    g = m.groups()
    if kind == "before_yesterday":
        x = d - timedelta(days=2)
        return x, x, "day"
    if kind in ("yesterday", "today", "tomorrow"):
        x = d + timedelta(days={"yesterday": -1, "today": 0, "tomorrow": 1}[kind])
        return x, x, "day"
    if kind == "ago":
        n = int(g[0]) if g[0].isdigit() else NUMS.get(g[0], 1)
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[g[1]] * n
        x = d - timedelta(days=days)
        size = {"day": 0, "week": 6, "month": 29, "year": 364}[g[1]]
        return x - timedelta(days=size // 2), x + timedelta(days=size - size // 2), g[1]
    if kind == "rel_period":
        a, b = _period(g[0], g[1], d)
        return a, b, g[1]
    if kind == "rel_day":
        wd = DAYS[g[1]]
        if g[0] == "next":
            x = d + timedelta(days=(wd - d.weekday() - 1) % 7 + 1)
        else:
            x = d - timedelta(days=(d.weekday() - wd - 1) % 7 + 1)
        return x, x, "day"
    if kind == "day_month":
        y = int(g[2]) if g[2] else d.year
        return _safe(y, MONTHS[g[1]], int(g[0]))
    if kind == "month_day":
        y = int(g[2]) if g[2] else d.year
        return _safe(y, MONTHS[g[0]], int(g[1]))
    if kind == "month_year":
        if g[0] == "may" and not g[1] and not m.group(0).startswith("in"):
            return None  # the modal verb "may"
        a, b = _month_span(int(g[1]) if g[1] else d.year, MONTHS[g[0]])
        return a, b, "month"
    if kind == "year":
        y = int(g[0])
        return date(y, 1, 1), date(y, 12, 31), "year"
    return None


def _safe(y: int, mo: int, day: int):
    try:
        x = date(y, mo, day)
    except ValueError:
        return None
    return x, x, "day"


def label(span: dict) -> str:
    """A compact human form of a resolved span: '7 May 2023', 'May 2023', '2022', '1-7 May 2023'."""
    a, b = date.fromisoformat(span["start"]), date.fromisoformat(span["end"])
    if a == b:
        return f"{a.day} {a.strftime('%B %Y')}"
    if span["grain"] == "month":
        return a.strftime("%B %Y")
    if span["grain"] == "year":
        return str(a.year)
    return f"{a.day} {a.strftime('%B %Y')} - {b.day} {b.strftime('%B %Y')}"
