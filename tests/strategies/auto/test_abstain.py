"""``auto`` abstains when the memory holds nothing about the question, and only then; the
context is the same either way."""

from __future__ import annotations

import pytest

from helpers import payload

pytestmark = pytest.mark.anyio

CHAT = [
    ("Ana", "I finally adopted a puppy, a small beagle called Biscuit."),
    ("Ben", "Congrats! How is Biscuit settling in at your flat?"),
    ("Ana", "He chewed my running shoes on the first night, but he sleeps in his basket now."),
    ("Ben", "Ha. Are you still training for the half marathon in October?"),
    ("Ana", "Yes, I run along the river every morning before work, about eight kilometres."),
    ("Ben", "I started pottery classes on Thursdays at the community studio."),
    ("Ana", "Pottery sounds relaxing. What did you make so far?"),
    ("Ben", "Two wobbly bowls and a mug with a handle that fell off in the kiln."),
    ("Ana", "My sister is visiting from Porto next weekend, we will go hiking in the hills."),
    ("Ben", "Take Biscuit along, beagles love long walks."),
    ("Ana", "Work has been hectic, we are moving the bakery to a bigger shop on Elm Street."),
    ("Ben", "The new bakery will be great. Will you still sell the cardamom buns?"),
    ("Ana", "Of course, the cardamom buns sell out every Saturday morning."),
    ("Ben", "I will come by on Saturday then, and bring my wobbly mug for coffee."),
]
OFF_TOPIC = ["What's the capital of Mongolia?", "How do I reverse a linked list in Rust?",
             "What is the half-life of carbon-14?", "Who won the 1966 FIFA World Cup?"]
ANSWERABLE = ["What is Ana's puppy called?", "Where does Ana run in the morning?",
              "What did Ben make in pottery class?", "Where is the bakery moving to?"]


async def test_auto_abstains_off_topic_only(client, server):
    msgs = [{"content": text, "speaker": who, "ref": f"m{i}"} for i, (who, text) in enumerate(CHAT)]
    payload(await client.call_tool("remember", {"messages": msgs, "session_id": "s1",
                                                "session_time": "2024-03-02T10:00:00Z"}))
    for wait in (False, True):   # before curation (auto answers through plain), then fused
        if wait:
            assert server.runtime.curation.wait_idle(120)
        for q in OFF_TOPIC:
            out = payload(await client.call_tool("recall", {"query": q}))
            assert out["abstain"], (q, out["route_reason"])
            assert out["context"] and "abstains" in out["route_reason"]   # evidence still given
        for q in ANSWERABLE:
            out = payload(await client.call_tool("recall", {"query": q}))
            assert not out["abstain"], (q, out["route_reason"])


# paraphrases: at most a third of each one's content words occur in the conversation, so the
# flag rests on the cosine alone (read against turn pairs, their z was 0.24, -0.03 and -0.19;
# against query-to-turn pairs 1.64, 1.34 and 1.16)
PARAPHRASED = ["Which dog breed did she get?", "What exercise does she do before her job?",
               "What went wrong with the cup he made?"]


async def test_e5_paraphrases_are_not_off_topic(home):
    """With e5 a query and a document carry different prefixes, so two stored turns lie closer
    together than any query comes to its answer: read against pairs of turns, every paraphrase
    here abstained. ``relevance.py`` reads an asymmetric embedder's query against query-to-turn
    cosines; off-topic questions still abstain."""
    from mcp import Client

    from trimem.providers.e5_check import unavailable_reason
    from trimem.server.app import build_server
    from trimem.server.settings import Settings

    if unavailable_reason() is not None:
        pytest.skip(f"e5 cannot run here: {unavailable_reason()}")
    server = build_server(Settings(home=str(home), embedder="e5-small", curation=False))
    msgs = [{"content": text, "speaker": who, "ref": f"m{i}"} for i, (who, text) in enumerate(CHAT)]
    async with Client(server) as client:
        payload(await client.call_tool("remember", {"messages": msgs, "session_id": "s1",
                                                    "session_time": "2024-03-02T10:00:00Z"}))
        assert server.runtime.embedder.name == "multilingual-e5-small-q4"
        for q in PARAPHRASED:
            out = payload(await client.call_tool("recall", {"query": q}))
            assert not out["abstain"], (q, out["route_reason"])
        for q in OFF_TOPIC:
            out = payload(await client.call_tool("recall", {"query": q}))
            assert out["abstain"], (q, out["route_reason"])
