"""Host-curated memories without a timestamp take the session's time, not the time of storage."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from helpers import payload, turns

pytestmark = pytest.mark.anyio


def at(text: str) -> datetime:
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


async def curated_times(client, source_id: str) -> dict[str, datetime]:
    """text -> timestamp of the host-curated memories citing ``source_id``."""
    exp = payload(await client.call_tool("explain", {"id": source_id}))
    return {d["text"]: at(d["timestamp"]) for d in exp["derived"] if d["origin"] == "host"}


async def test_undated_curated_memories_take_the_session_time(client):
    curated = {"episodes": [{"title": "Porto", "summary": "Ana moved to Porto.", "refs": ["t1"]}],
               "facts": [{"subject": "Ana", "relation": "adopted", "object": "Miso", "refs": ["t1"]},
                         {"subject": "Ana", "relation": "visited", "object": "Braga", "refs": ["t1"],
                          "timestamp": "2024-04-20T09:00:00Z"}]}
    res = payload(await client.call_tool("remember", {
        "messages": turns("I moved to Porto and adopted Miso."), "session_id": "s1",
        "session_time": "2024-05-08T13:56:00Z", "curated": curated}))
    times = await curated_times(client, res["source_ids"][0])
    assert times == {"Porto\nAna moved to Porto.": at("2024-05-08T13:56:00Z"),
                     "Ana adopted Miso": at("2024-05-08T13:56:00Z"),
                     "Ana visited Braga": at("2024-04-20T09:00:00Z")}   # its own time stays

    # appending without a session_time: the session's stored time
    more = {"facts": [{"subject": "Ana", "relation": "likes", "object": "tea", "refs": ["u1"]}]}
    res = payload(await client.call_tool("remember", {
        "messages": turns("I like tea.", prefix="u"), "session_id": "s1", "curated": more}))
    assert await curated_times(client, res["source_ids"][0]) == {
        "Ana likes tea": at("2024-05-08T13:56:00Z")}


async def test_a_new_session_without_session_time_uses_its_messages_time(client):
    msgs = [{"content": "We met at the harbour.", "ref": "m1", "timestamp": "2023-07-02T18:30:00Z"},
            {"content": "Then we had dinner.", "ref": "m2", "timestamp": "2023-07-02T20:00:00Z"}]
    curated = {"facts": [{"subject": "we", "relation": "met at", "object": "the harbour",
                          "refs": ["m1", "m2"]}]}
    res = payload(await client.call_tool("remember", {"messages": msgs, "curated": curated}))
    assert await curated_times(client, res["source_ids"][1]) == {
        "we met at the harbour": at("2023-07-02T18:30:00Z")}   # the session's time: its first message
