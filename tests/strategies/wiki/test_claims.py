"""Claim extraction, entities, facets and relative dates (deterministic, no store)."""

from datetime import datetime, timezone

from source_rows import source

from trimem.strategies.wiki import claims, dates, text

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def test_dates_resolve_against_session_time():
    got = {d["text"]: (d["start"], d["end"]) for d in dates.resolve(
        "I went to a support group yesterday, ran a race last Sunday and moved 4 years ago. "
        "We go camping next month; I painted it last year.", WHEN)}
    assert got["yesterday"] == ("2023-05-07", "2023-05-07")
    assert got["last sunday"] == ("2023-05-07", "2023-05-07")
    assert got["next month"] == ("2023-06-01", "2023-06-30")
    assert got["last year"] == ("2022-01-01", "2022-12-31")
    assert got["4 years ago"][0] <= "2019-05-09" <= got["4 years ago"][1]
    assert dates.resolve("you may come", WHEN) == []


def test_claims_entities_facets_and_slots():
    row = source(id="s1", session_id="a", seq=0, speaker="Ana", ref="r1", timestamp=WHEN,
                 text="I moved to Berlin last month! My dog Rex loves the park. Ok"
                      " [image: a dog in a park]")
    cl = claims.claims_of(row, WHEN)
    assert [c.text for c in cl] == ["I moved to Berlin last month!", "My dog Rex loves the park.",
                                       "[image: a dog in a park]"]
    first = cl[0]
    assert first.names == ["Berlin"] and first.slot == "ana|residence"
    assert first.dates[0]["start"] == "2023-04-01" and first.ref == "r1"
    assert "pets" in cl[1].facets and "Rex" in cl[1].names and "rex" in cl[1].heads
    assert text.named_entities("Hey Mel! Thanks, Caroline's LGBTQ group") == ["Mel", "Caroline", "LGBTQ"]


def test_exchanges_group_a_turn_with_its_replies():
    rows = [source(id=str(i), seq=i, speaker=s) for i, s in enumerate("ABABBA")]
    assert [[r.speaker for r in ex] for ex in claims.exchanges(rows)] == \
        [["A", "B"], ["A", "B", "B"], ["A"]]
    solo = [source(id=str(i), seq=i, speaker="A") for i in range(3)]
    assert len(claims.exchanges(solo)) == 3
