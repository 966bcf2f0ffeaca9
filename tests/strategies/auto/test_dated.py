"""auto: a question that names a day or month gives that time's turns a vote (``dated.py``)."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from helpers import payload
from trimem.strategies.auto.dated import MAX_PERIODS, periods_named

pytestmark = pytest.mark.anyio

LATEST = datetime(2024, 2, 1, 9, 0, tzinfo=timezone.utc)


def D(y, m, d):
    return f"day:{date(y, m, d).isoformat()}"


@pytest.mark.parametrize("query, keys", [
    ("What did she explore on 24.01.2024?", [D(2024, 1, 24)]),
    ("What did he find on 1 February, 2023?", [D(2023, 2, 1)]),
    ("the painting shown on October 13, 2023", [D(2023, 10, 13)]),
    ("Where is she going on the 10th of February 2024?", [D(2024, 2, 10)]),
    ("the movie on the 31 of December 2023", [D(2023, 12, 31)]),
    ("naps on January 6 2024, and on 2024-01-08", [D(2024, 1, 6), D(2024, 1, 8)]),
    ("on 24/01/24", [D(2024, 1, 24)]),                     # only one reading is a date
    ("on 03/04/2024", [D(2024, 4, 3), D(2024, 3, 4)]),  # both readings are searched
    ("What about May 5?", [D(2023, 5, 5)]),                # year-less: the latest before
    ("at 10:30 on Jan 31st", [D(2024, 1, 31)]),
    ("Did she pass the test before December 23rd, 2023?", []),   # bounds a period
    ("the cake on Friday before 10.01.2024", []),
    ("since 2024-01-02, until 5 Jan", []),
    ("on 31 February 2024 or 13.13.2024", []),                 # no such days
    ("on 9999-12-31, 0000-01-01 or in December 9999", [D(9999, 12, 31)]),   # no year 0 or
    # 10000 (where December 9999 would end): those are ignored
    ("in May 2023, or in 2024", ["month:2023-05"]),             # a month; a year is not
    ("What setback did she face in late October?", ["month:2023-10"]),   # the latest October
    ("during January and in early Feb", ["month:2024-01", "month:2024-02"]),
    ("sick in january? in may we will see", []),   # a year-less month must be capitalised
    ("What happened March 2023, before May 2023?", ["month:2023-03"]),
    ("the 10th of February 2024, in February", [D(2024, 2, 10), "month:2024-02"]),
])
def test_the_days_and_months_a_question_names(query, keys):
    found = periods_named(query, LATEST)
    assert [k for k, _, _ in found] == keys
    for key, since, until in found:   # whole days and months, both ends inclusive
        assert since.tzinfo is not None and since.hour == since.minute == 0
        assert (until + timedelta(microseconds=1)).day == 1 if key.startswith("month") else \
            until - since == timedelta(days=1, microseconds=-1)


def test_at_most_a_few_periods_are_searched():
    q = " ".join(f"on 2024-01-{d:02d}" for d in range(1, 9))
    assert [k for k, _, _ in periods_named(q, LATEST)] == \
        [D(2024, 1, d) for d in range(1, MAX_PERIODS + 1)]


DINNERS = {"2024-03-01": "For dinner we ate pasta with tomato sauce, a quick weeknight dinner.",
           "2024-03-02": "Dinner was pasta again, we ate it on the balcony.",
           "2024-03-03": "We ate a pasta bake for dinner with the neighbours.",
           "2024-03-04": "For dinner we ate leftover pasta and a salad.",
           "2024-03-05": "Dinner tonight was sushi at the little harbour place.",
           "2024-03-06": "We ate pasta for dinner, the fresh kind from the market."}


async def test_the_named_days_turns_vote(client, server):
    for day, text in DINNERS.items():
        msgs = [{"content": text, "speaker": "user", "ref": f"{day}-a"},
                {"content": "Noted, enjoy the evening.", "speaker": "assistant",
                 "ref": f"{day}-b"}]
        payload(await client.call_tool("remember", {
            "messages": msgs, "session_id": day, "session_time": f"{day}T19:00:00",
            "namespace": "meals"}))
    assert server.runtime.curation.wait_idle(120)
    q = "What did we eat for dinner on 5 March 2024?"
    out = payload(await client.call_tool("recall", {"query": q, "namespace": "meals",
                                                    "budget_tokens": 60}))
    assert "the question names day 2024-03-05" in out["route_reason"]
    rec = payload(await client.call_tool("explain", {"id": out["recall_id"],
                                                     "namespace": "meals"}))["record"]
    assert rec["route"]["periods"] == {"day:2024-03-05": 1.0}
    first = rec["chosen"][0]   # the day's turn ranks first, by that day's vote
    said = {s["id"]: s["ref"] for s in out["sources"]}
    assert said[first["id"]] == "2024-03-05-a" and first["ranks"]["day:2024-03-05"] == 1
    # without the day's vote another day's pasta ranks first: this test can fail
    from trimem.strategies.base import RecallRequest
    from trimem.strategies.options import RecallOptions
    from trimem.strategies.registry import get

    env = server.runtime.env("meals")
    off = get("auto").recall(env, RecallRequest(query=q, budget_tokens=60,
                                                options=RecallOptions.parse({"w_dated": 0})))
    assert off.trace["chosen"][0]["id"] != first["id"]
    # a day with no turns adds nothing
    none = payload(await client.call_tool("recall", {
        "query": "What did we eat for dinner on 9 March 2024?", "namespace": "meals"}))
    assert "the question names" not in none["route_reason"]


NOW = datetime(2026, 12, 3, 15, 0, tzinfo=timezone.utc)   # a Thursday


@pytest.mark.parametrize("query, keys", [
    ("What did we eat yesterday?", [D(2026, 12, 2)]),
    ("what did I say 3 days ago", [D(2026, 11, 30)]),
    ("What did we discuss this morning?", [D(2026, 12, 3)]),
    ("What did we plan on Friday?", [D(2026, 11, 27)]),
    ("What happened last week, and last month?",
     ["days:2026-11-23..2026-11-29", "days:2026-11-01..2026-11-30"]),
    ("What changed since last week?", []),                      # bounds a period
    ("What did we do last year, or in the summer?", []),        # too wide to point anywhere
])
def test_relative_days_count_back_from_the_present(query, keys):
    # the namespace's latest session (2024) does not move them: they mean the caller's present
    assert [k for k, _, _ in periods_named(query, LATEST, NOW)] == keys


async def test_yesterday_means_the_day_before_today(client, server):
    today = datetime.now(timezone.utc).date()
    for back, text in ((1, "Dinner yesterday was ramen at the corner shop."),
                       (2, "We ate ramen for dinner at home, with eggs."),
                       (3, "For dinner we ate ramen again, spicy this time."),
                       (4, "Ramen for dinner, the instant kind.")):
        day = (today - timedelta(days=back)).isoformat()
        payload(await client.call_tool("remember", {
            "messages": [{"content": text, "speaker": "user", "ref": day}], "session_id": day,
            "session_time": f"{day}T12:00:00", "namespace": "ramen"}))
    assert server.runtime.curation.wait_idle(120)
    yesterday = (today - timedelta(days=1)).isoformat()
    out = payload(await client.call_tool("recall", {"query": "What did we eat yesterday?",
                                                    "namespace": "ramen", "budget_tokens": 60}))
    assert f"day {yesterday}" in out["route_reason"]
    rec = payload(await client.call_tool("explain", {"id": out["recall_id"],
                                                     "namespace": "ramen"}))["record"]
    said = {s["id"]: s["ref"] for s in out["sources"]}
    assert said[rec["chosen"][0]["id"]] == yesterday
