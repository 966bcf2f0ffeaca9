"""Relative dates resolved against the session time (the paper's appendix A: "temporal precision").

The episodic prompt asks the model to turn "last Saturday" into a date; without a model this
module does it by rule. Choices the paper leaves open:

* A resolved expression keeps its wording and gains the date in words, e.g. "yesterday" ->
  "yesterday (7 May 2023)", "last Sunday" -> "last Sunday (the Sunday before 25 May 2023,
  21 May 2023)": words-style dates match how people (and LoCoMo's answers) say dates, and the
  original words stay so nothing the speaker said is lost.
* Week-level phrases ("last week", "next weekend") resolve to "the week before/of/after <date>";
  month and year phrases to "April 2023" / "2022"; "N days/weeks/months/years ago" and "in N ..."
  to a day, or to a month/year when the unit is that coarse.
* A bare weekday ("on Friday") is taken as the most recent such day before the session (people
  tell what happened); with "next"/"this coming" it is the following one.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]
NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
       "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "couple of": 2,
       "a few": 3, "few": 3, "several": 3}
_N = r"(\d+|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_D = "|".join(DAYS)

PATTERNS = [
    ("ago", re.compile(rf"\b{_N} (day|week|weekend|month|year)s? ago\b", re.I)),
    ("in", re.compile(rf"\bin {_N} (day|week|month|year)s?\b", re.I)),
    ("rel_day", re.compile(rf"\b(last|this past|past|this|next|this coming|coming|on) ({_D})\b", re.I)),
    ("rel_unit", re.compile(r"\b(last|this past|past|this|next) (week|weekend|month|year|summer|"
                            r"winter|spring|fall|autumn)\b", re.I)),
    ("word", re.compile(r"\b(yesterday|today|tonight|tomorrow|last night|the other day|"
                        r"the day before yesterday)\b", re.I)),
]


def fmt_day(d: date) -> str:
    return f"{d.day} {MONTHS[d.month - 1]} {d.year}"


def fmt_month(y: int, m: int) -> str:
    while m < 1:
        y, m = y - 1, m + 12
    while m > 12:
        y, m = y + 1, m - 12
    return f"{MONTHS[m - 1]} {y}"


def _num(s: str) -> int:
    s = s.lower()
    return int(s) if s.isdigit() else NUM.get(s, 1)


def _word(w: str, ref: date) -> str:
    if w in ("yesterday", "last night"):
        return fmt_day(ref - timedelta(days=1))
    if w in ("today", "tonight"):
        return fmt_day(ref)
    if w == "tomorrow":
        return fmt_day(ref + timedelta(days=1))
    if w == "the day before yesterday":
        return fmt_day(ref - timedelta(days=2))
    return f"a few days before {fmt_day(ref)}"


def _shifted(kind: str, n: int, unit: str, ref: date) -> str:
    """"N units ago" / "in N units"."""
    sign = -1 if kind == "ago" else 1
    if unit == "day":
        return fmt_day(ref + sign * timedelta(days=n))
    if unit in ("week", "weekend"):
        return f"the week of {fmt_day(ref + sign * timedelta(weeks=n))}"
    if unit == "month":
        return fmt_month(ref.year, ref.month + sign * n)
    return str(ref.year + sign * n)


def _weekday(which: str, day: int, ref: date) -> str:
    """"next Friday", "this Monday", "last Sunday"."""
    if which in ("next", "this coming", "coming"):
        d = ref + timedelta(days=(day - ref.weekday()) % 7 or 7)
        return f"{DAYS[day].title()}, {fmt_day(d)}"
    if which == "this" and day >= ref.weekday():
        d = ref + timedelta(days=day - ref.weekday())
        return f"{DAYS[day].title()}, {fmt_day(d)}"
    d = ref - timedelta(days=(ref.weekday() - day) % 7 or 7)
    return f"the {DAYS[day].title()} before {fmt_day(ref)}, {fmt_day(d)}"


def _period(which: str, unit: str, ref: date) -> str:
    """"last week", "this month", "next year", "last summer"."""
    off = {"last": -1, "this past": -1, "past": -1, "this": 0, "next": 1}[which]
    if unit in ("week", "weekend"):
        word = {-1: "before", 0: "of", 1: "after"}[off]
        return f"the {unit} {word} {fmt_day(ref)}"
    if unit == "month":
        return fmt_month(ref.year, ref.month + off)
    if unit == "year":
        return str(ref.year + off)
    season_year = ref.year + off if off or unit != "winter" else ref.year
    return f"{unit} {season_year}"


def _resolve(kind: str, m: re.Match, ref: date) -> str | None:
    g = [x.lower() if x else x for x in m.groups()]
    if kind == "word":
        return _word(g[0], ref)
    if kind in ("ago", "in"):
        return _shifted(kind, _num(g[0]), g[1], ref)
    if kind == "rel_day":
        return _weekday(g[0], DAYS.index(g[1]), ref)
    return _period(g[0], g[1], ref)


def find_dates(text: str, when: datetime | date | None) -> list[tuple[int, int, str]]:
    """(start, end, resolved) for every relative date expression in ``text``."""
    if when is None:
        return []
    ref = when.date() if isinstance(when, datetime) else when
    spans: list[tuple[int, int, str]] = []
    for kind, rx in PATTERNS:
        for m in rx.finditer(text):
            if any(s < m.end() and m.start() < e for s, e, _ in spans):
                continue
            try:
                out = _resolve(kind, m, ref)
            except (OverflowError, ValueError, IndexError):   # beyond year 1..9999
                out = None
            if out:
                spans.append((m.start(), m.end(), out))
    return sorted(spans)


def resolve(text: str, when: datetime | date | None) -> tuple[str, list[str]]:
    """``text`` with each relative date followed by its resolution in brackets, and the list
    of resolutions (empty when there was nothing to resolve)."""
    spans = find_dates(text, when)
    if not spans:
        return text, []
    out, last = [], 0
    for _s, e, r in spans:
        out.append(text[last:e] + f" ({r})")
        last = e
    out.append(text[last:])
    return "".join(out), [r for _, _, r in spans]
