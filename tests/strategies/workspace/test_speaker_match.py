"""Named speakers (roles.py): the speaker feature of the affinity and the name-free query."""

import numpy as np

from trimem.strategies.speakers import query_names, speaker_match, without_speakers


def test_query_names_strip_possessives_and_keep_only_capitalised_words():
    assert query_names("What is Caroline's identity?") >= {"Caroline", "What"}
    assert "identity" not in query_names("What is Caroline's identity?")


def test_speaker_match_marks_the_named_speakers_turns():
    spk = ["Ana Lopez", "Ben", "Ana Lopez", None]
    assert speaker_match("What does Ana do to relax?", spk).tolist() == [1.0, 0.0, 1.0, 0.0]
    assert speaker_match("What did Lopez's team win?", spk).tolist() == [1.0, 0.0, 1.0, 0.0]


def test_speaker_match_is_silent_when_it_separates_nothing():
    spk = ["Ana", "Ben", "Ana"]
    assert not speaker_match("what happened last week?", spk).any()
    assert not speaker_match("What do Ana and Ben both like?", spk).any()   # every speaker named
    assert not speaker_match("what does ana like?", spk).any()   # a lower-case word is no name
    assert speaker_match("x", []).shape == (0,)
    assert isinstance(speaker_match("Ana", spk), np.ndarray)


def test_bm25_query_leaves_out_speaker_names_but_never_empties():
    assert without_speakers("What is Ana's job?", {"Ana", "Mel"}) == "What is job?"
    assert without_speakers("Where did Ana and Ben meet?", {"Ana", "Ben"}) == "Where did and meet?"
    assert without_speakers("Ana?", {"Ana"}) == "Ana?"
    assert without_speakers("Where is Paris?", {"Ana"}) == "Where is Paris?"
    assert without_speakers("Where is Ana?", set()) == "Where is Ana?"
