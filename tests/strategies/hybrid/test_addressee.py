"""In a group chat "you" is the person a turn answers, not the session's second speaker."""

import numpy as np
from source_rows import source

from trimem.strategies.hybrid.heuristics import curate_session
from trimem.strategies.speakers import addressee


def test_addressee_is_the_previous_other_speaker_else_the_next():
    spk = ["Ana", "Kit", "Ana", "Lou", "Lou", "Ana"]
    assert [addressee(spk, i) for i in range(len(spk))] == ["Kit", "Ana", "Kit", "Ana", "Ana", "Lou"]
    assert addressee(["Ana", "Ana"], 1) is None
    assert addressee(["user", "assistant"], 0) == "assistant"


def test_group_chat_tuples_name_the_person_answered():
    turns = [source(id=f"t{i}", seq=i, speaker=s, text=t) for i, (s, t) in enumerate([
        ("Ana", "Who is bringing food to the picnic on Saturday?"),
        ("Ana", "We still need drinks and plates for everyone."),
        ("Kit", "I will bring pizza and lemonade for the picnic."),
        ("Lou", "I can bring plates and napkins for the picnic."),
        ("Ana", "You saved the picnic with those plates and napkins.")])]
    rng = np.random.default_rng(0)
    vecs = {t.id: rng.normal(size=8).astype(np.float32) for t in turns}
    _, tuples = curate_session(turns, vecs, None)
    last = [x.object for x in tuples if x.source_ids == ["t4"]]
    assert last == ["Lou saved the picnic with those plates and napkins."]   # not "Kit saved"
