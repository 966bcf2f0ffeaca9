"""Names learned from the conversation: who is called what, whatever the speaker labels say.

The conversations are made up here; the store is a real LanceDB store in a temp folder and the
messages go in through the remember tool's code, embedded by the packaged model.
"""

import numpy as np
import pytest

from helpers import session
from source_rows import source

from trimem.server.settings import Settings
from trimem.strategies.aliases import learn, session_stats, speaker_aliases, vocatives
from trimem.strategies.speakers import speaker_match, without_speakers


def rows(*pairs):
    return [source(id=f"m{i}", seq=i, speaker=s, text=t) for i, (s, t) in enumerate(pairs)]


ROLES = rows(("user", "Hi! I'm Priya. Can you help me plan a garden?"),
             ("assistant", "Of course, Priya. What grows well where you live?"),
             ("user", "Tomatoes mostly. Thanks for the tips, Sage!"),
             ("assistant", "You're welcome, Priya! Water them in the morning."),
             ("user", "Will do. Bye Sage!"))


def test_vocatives_find_names_in_address_positions_only():
    assert vocatives("Hey Tomas! How was Lisbon?") == ["Tomas"]
    assert vocatives("That's so cool Tomas!") == ["Tomas"]
    assert vocatives("Tomas, look at this.") == ["Tomas"]
    assert vocatives("I flew to Lisbon. We loved Porto!") == []   # after a preposition / verb
    assert vocatives("Thanks guys! See you soon.") == []          # a term of address, no name


def test_user_and_assistant_roles_get_the_names_they_are_called():
    got = learn([session_stats(ROLES)])
    assert got == {"user": {"Priya"}, "assistant": {"Sage"}}


def test_a_name_used_for_the_other_person_goes_to_them_not_to_the_label():
    chat = rows(("Ina", "Hey, who is this?"), ("bo", "Haha, I'm Rafa. And you?"),
                ("Ina", "Nice to meet you Rafa!"), ("bo", "Likewise."),
                ("Ina", "How was the trip, Rafa?"), ("bo", "Great, thanks Ina."))
    assert learn([session_stats(chat)]) == {"bo": {"Rafa"}}   # Ina is a label already


def test_in_a_group_the_addressee_is_the_one_answered():
    chat = rows(("Ana", "Who is bringing food on Saturday?"), ("Kit", "Me, pizza."),
                ("Ana", "Perfect, thanks Kiki!"), ("Lou", "I'll bring drinks."),
                ("Ana", "Great Lou!"), ("Kit", "Anything else?"), ("Ana", "No, we're set Kiki."))
    assert learn([session_stats(chat)]) == {"Kit": {"Kiki"}}


def test_places_and_sentence_openers_are_not_names():
    chat = rows(("A", "I went to Rome. Loved Rome!"), ("B", "Rome is great. Honestly, go!"),
                ("A", "Honestly, Rome again next year."), ("B", "Honestly, see you in Rome!"),
                ("A", "Rome!"), ("B", "Honestly, yes."))
    assert learn([session_stats(chat)]) == {}


def test_speaker_search_uses_the_aliases_and_ignores_label_case():
    spk = ["user", "assistant", "user", "elin", "ova"]
    al = {"user": {"Priya"}}
    assert speaker_match("What does Priya grow?", spk, al).tolist() == [1, 0, 1, 0, 0]
    assert not speaker_match("What does Priya grow?", spk).any()       # labels only
    assert speaker_match("Where did Elin go?", spk).tolist() == [0, 0, 0, 1, 0]
    assert without_speakers("What does Priya grow?", {"user"}, al) == "What does grow?"
    assert without_speakers("Where did Elin go?", {"elin"}) == "Where did go?"


@pytest.fixture
def runtime(tmp_path):
    from trimem.tools.runtime import Runtime

    rt = Runtime(Settings(home=str(tmp_path / "home"), curation=False).to_config())
    yield rt
    rt.close()


def remember(rt, sid, pairs):
    from trimem.tools.remember import Message, remember as remember_tool

    msgs = [Message(content=t, speaker=s, ref=f"{sid}:{i}") for i, (s, t) in enumerate(pairs)]
    remember_tool(rt, msgs, session_id=sid, namespace="ns")


def test_aliases_are_learned_per_namespace_and_follow_new_sessions(runtime, monkeypatch):
    import trimem.strategies.aliases as aliases

    monkeypatch.setattr(aliases, "RECHECK_S", 0.0)
    remember(runtime, "s1", [(r.speaker, r.text) for r in ROLES])
    space = runtime.space("ns")
    assert speaker_aliases(runtime.context("ns"), space) == {"user": {"Priya"}, "assistant": {"Sage"}}
    assert speaker_aliases(runtime.context("other"), runtime.space("other")) == {}
    read = []
    real = type(space.sources).by_session
    # the class is patched, so count only this space's reads: a curation thread another test
    # left draining in this worker process reads its own "s2" through the same method
    monkeypatch.setattr(type(space.sources), "by_session",
                        lambda self, sid: (read.append(sid) if self is space.sources else None)
                        or real(self, sid))
    assert speaker_aliases(runtime.context("ns"), space)["user"] == {"Priya"} and read == []   # cached: nothing read
    remember(runtime, "s2", [("user", "Hello again Sage!"), ("assistant", "Hi Pri!"),
                             ("user", "Any news on the tomatoes?"),
                             ("assistant", "They need sun, Pri.")])
    assert speaker_aliases(runtime.context("ns"), space) == {"user": {"Priya", "Pri"}, "assistant": {"Sage"}}
    assert read == ["s2"]                     # only the new session was read


def test_named_search_strips_an_alias_through_the_store(runtime):
    from trimem.strategies.base import RecallRequest
    from trimem.strategies.search import search_turns

    remember(runtime, "s1", [(r.speaker, r.text) for r in ROLES])
    env = runtime.env("ns")
    req = RecallRequest(query="What does Priya want to grow?", budget_tokens=500)
    order, parts = search_turns(env, req, 20)
    assert any("content_rank" in p for p in parts.values())   # the name-free list ran
    assert np.isfinite([p["score"] for p in parts.values()]).all()


def test_a_new_process_takes_the_votes_curation_stored_and_a_forget_drops_them(tmp_path,
                                                                              monkeypatch):
    """Curation stores each session's name votes; a process started later learns the names from
    them without reading the messages, and a forget (which leaves the sessions' message counts
    as they were) drops the votes of the sessions it touched, so the forgotten turns no longer
    name anyone."""
    from trimem.storage.sources import Sources
    from trimem.strategies import aliasstats
    from trimem.tools.forget import forget
    from trimem.tools.runtime import Runtime

    home = str(tmp_path / "home")
    sessions = {f"s{k}": [(r.speaker, r.text) for r in ROLES] for k in range(1, 5)}
    sessions["s5"] = [("user", "Hello again Sage!"), ("assistant", "Hi Pri!"),
                      ("user", "Any news on the tomatoes?"), ("assistant", "They need sun, Pri."),
                      ("user", "Thanks Sage.")]
    rt = Runtime(Settings(home=home, curation=True).to_config())
    try:
        for sid, pairs in sessions.items():
            remember(rt, sid, pairs)
        assert rt.curation.wait_idle(timeout=300)
        assert not rt.curation.failures
        assert rt.space("ns").derived.count_rows(aliasstats.KIND) == 5
    finally:
        rt.close()
    scans = []
    real = Sources.all
    monkeypatch.setattr(Sources, "all", lambda self: scans.append(1) or real(self))
    want = {"user": {"Priya", "Pri"}, "assistant": {"Sage"}}
    rt = Runtime(Settings(home=home, curation=False).to_config())
    try:
        assert speaker_aliases(rt.context("ns"), rt.space("ns")) == want
        assert scans == []                      # the stored votes, no read of every message
        pri = [f"s5:{i}" for i in (1, 3)]       # the two turns that call the user "Pri"
        assert forget(rt, refs=pri, namespace="ns").removed_sources == 2
        assert session(rt.space("ns"), "s5").n_messages == 5   # the count did not move
        assert rt.space("ns").derived.count_rows(aliasstats.KIND) == 4
    finally:
        rt.close()
    rt = Runtime(Settings(home=home, curation=False).to_config())
    try:
        assert speaker_aliases(rt.context("ns"), rt.space("ns")) == {
            "user": {"Priya"}, "assistant": {"Sage"}}
    finally:
        rt.close()


def test_votes_counted_by_a_cold_process_are_kept_for_the_next(tmp_path, monkeypatch):
    """A store whose sessions were never curated (curation off, or curated before the votes were
    stored): the first process counts them from the messages and keeps them; the next does not
    read the messages again."""
    from trimem.storage.sources import Sources
    from trimem.strategies import aliasstats
    from trimem.tools.runtime import Runtime

    home = str(tmp_path / "home")
    scans = []
    real = Sources.all
    monkeypatch.setattr(Sources, "all", lambda self: scans.append(1) or real(self))
    want = {"user": {"Priya"}, "assistant": {"Sage"}}
    for k in range(3):
        rt = Runtime(Settings(home=home, curation=False).to_config())
        try:
            if k == 0:
                for i in range(5):
                    remember(rt, f"s{i}", [(r.speaker, r.text) for r in ROLES])
            else:
                assert speaker_aliases(rt.context("ns"), rt.space("ns")) == want
                assert rt.space("ns").derived.count_rows(aliasstats.KIND) == 5
        finally:
            rt.close()
    assert scans == [1]   # the first process to learn read the messages, the second did not
