"""A merge writes the merged text on the survivor (re-embedded, so what the absorbed rows said
stays searchable), with lineage: the heuristic merge of texts, then the host's model rewriting
it through sampling at the next consolidate."""

from __future__ import annotations

import pytest
from mcp import Client

from helpers import payload
from sampling_host import Host
from trimem.strategies.hybrid.rules import merged_text

pytestmark = pytest.mark.anyio


def test_merged_text_is_deterministic_deduplicated_and_bounded():
    a = "Ben adopted a beagle puppy named Biscuit"
    b = "Ben adopted a beagle puppy named Biscuit from the animal shelter"
    c = "Biscuit sleeps on his bed. Ben adopted a beagle puppy named Biscuit."
    assert merged_text([a, b, c]) == ("Ben adopted a beagle puppy named Biscuit from the animal "
                                      "shelter. Biscuit sleeps on his bed.")
    assert merged_text([a]) == a
    long = merged_text(["First thing.", "x " * 900, "Second thing."], limit=60)
    assert long == "First thing. Second thing." and len(long) <= 60


def fact(o, ref, when):
    return {"subject": "Ben", "relation": "adopted", "object": o, "context": "", "refs": [ref],
            "timestamp": when}


async def test_a_merge_writes_the_merged_text_and_the_host_rewrites_it(server):
    host = Host("good")
    async with Client(server, mode="legacy", sampling_callback=host) as c:
        for sid, when, obj, other in [
                ("a", "2023-01-10T10:00:00", "a beagle puppy named Biscuit. Biscuit was eight weeks old", "Ana plays the violin in a small orchestra"),
                ("b", "2023-03-10T10:00:00", "a beagle puppy named Biscuit from the animal shelter",
                 "Ana grows tomatoes on her balcony")]:
            msgs = [{"content": f"{obj} ({sid})", "speaker": "Ben", "ref": f"{sid}1"},
                    {"content": other, "speaker": "Ana", "ref": f"{sid}2"}]
            payload(await c.call_tool("remember", {"messages": msgs, "session_id": sid,
                                                   "session_time": when, "curated": {
                                                       "facts": [fact(obj, f"{sid}1", when), {
                                                           "subject": "Ana", "relation": other.split()[1],
                                                           "object": other.split(" ", 2)[2],
                                                           "refs": [f"{sid}2"]}]}}))
        rt = server.runtime
        assert rt.curation.wait_idle(60)
        out = payload(await c.call_tool("consolidate", {"min_cluster_size": 2}))
        (op,) = [o for o in out["operations"] if o.get("op") == "merge" and o["kind"] == "fact"]
        space = rt.space("default")
        (keep,) = space.memories.get([op["into"]])
        # the survivor (newest) says more than the first sentence it absorbs; the rest is added
        assert keep.text == ("Ben adopted a beagle puppy named Biscuit from the animal "
                                "shelter. Biscuit was eight weeks old.")
        assert keep.body["merged_text_by"] == "heuristic" and keep.text == op["merged_text"]
        assert keep.lineage["text_before"] and keep.lineage["absorbed"][0]["id"] == op["ids"][0]
        assert [h["op"] for h in keep.lineage["history"]][-1] == "merged_text"
        assert not host.requests                        # nothing was pending before this run
        # the next consolidate asks the host's model to write the merge's text
        out = payload(await c.call_tool("consolidate", {"min_cluster_size": 2}))
        assert out["host_model"]["merges"] == 1
        (keep,) = space.memories.get([op["into"]])
        assert keep.text == "Merged by the host model."
        assert keep.body["merged_text_by"] == "sampling:scripted-model"
        exp = payload(await c.call_tool("explain", {"id": keep.id}))
        assert "written by sampling:scripted-model" in exp["summary"]
        assert "Merged by the host model." in {i["text"] for i in payload(await c.call_tool(
            "recall", {"query": "Ben's beagle from the shelter", "strategy": "hybrid"}))["items"]}

        # restoring the absorbed row gives the survivor its own text back
        from trimem.strategies.hybrid.strategy import HybridStrategy

        assert HybridStrategy().restore(rt.env("default"), op["ids"][0])["changed"]
        (keep,) = space.memories.get([op["into"]])
        assert keep.text == "Ben adopted a beagle puppy named Biscuit from the animal shelter"
