"""Fixtures for the hybrid strategy's tests: a small two-speaker conversation over three sessions."""

from __future__ import annotations

import pytest

SESSIONS = [
    ("s1", "2023-05-08T13:56:00", [
        ("Ana", "Hey Ben! I went to a pottery class yesterday and it was so relaxing."),
        ("Ben", "That sounds lovely. I adopted a puppy named Biscuit last Saturday."),
        ("Ana", "A puppy! What breed is Biscuit? I have always wanted a golden retriever."),
        ("Ben", "Biscuit is a beagle. My sister Carla helped me pick him at the shelter."),
        ("Ana", "I live in Lisbon now, the weather here is great for long walks."),
        ("Ben", "I work at a bakery in Porto, mornings start at four o'clock."),
    ]),
    ("s2", "2023-06-20T10:00:00", [
        ("Ana", "I moved to Madrid last month for a new design job."),
        ("Ben", "Congratulations! I am training Biscuit for an agility contest next month."),
        ("Ana", "My pottery teacher says my bowls are getting much better."),
        ("Ben", "Carla and I are planning a camping trip to the Douro valley next week."),
    ]),
    ("s3", "2023-08-02T18:30:00", [
        ("Ana", "I live in Madrid now and I love the museums here."),
        ("Ben", "Biscuit won second prize at the agility contest two weeks ago!"),
        ("Ana", "Wow, tell Biscuit congratulations from me."),
        ("Ben", "The camping trip with Carla was rainy but we saw wild horses."),
    ]),
]


def session_messages(sid: str, when: str, lines) -> list[dict]:
    return [{"content": text, "speaker": who, "ref": f"{sid}:{k}"}
            for k, (who, text) in enumerate(lines, 1)]


async def remember_all(client, namespace: str = "default") -> None:
    from helpers import payload

    for sid, when, lines in SESSIONS:
        payload(await client.call_tool("remember", {
            "messages": session_messages(sid, when, lines), "session_id": sid,
            "session_time": when, "namespace": namespace}))


@pytest.fixture
def conversation():
    return SESSIONS


@pytest.fixture(name="remember_all")
def remember_all_fixture():
    """``await remember_all(client, namespace="default")`` stores the three sessions."""
    return remember_all
