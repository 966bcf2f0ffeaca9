"""A long reply in the exchange of the evidence is not quoted for its neighbour's sake (real
LanceDB in a temp folder, real embedder): the wiki lifts a turn by the best turns of its snapshot
and trajectory, but a message too long to quote whole that the search did not rank among its
best has nothing to show but its opening, which would take a quarter of a small budget. The
same holds for the workspace's context inheritance."""

import random

import pytest

from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies.render import WHOLE_CHARS
from trimem.tools.recall import recall
from trimem.tools.remember import Message, remember

WORDS = ("river market violin tomato ladder cloud pencil saddle marble orchard candle lantern "
         "ribbon harbor meadow copper velvet thunder walnut biscuit compass feather glacier "
         "kettle mosaic nutmeg parsley quartz rooftop sparrow tundra umbrella whistle").split()
ASKED = ["spare", "lighthouse", "hidden", "key"]
PROSE = ("The deploy pipeline builds the container twice, once for the tests and once for the "
         "release. Building once and promoting the same image digest through the stages makes "
         "the artifact you tested the one you ship. Caching uses the full URL including "
         "tracking parameters, so the hit rate is low; normalising the URL should lift it. ")


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    server = build_server(Settings(home=str(tmp_path_factory.mktemp("long") / "home")))
    rt, rng = server.runtime, random.Random(3)
    # 240 short turns of unrelated words, each with one word of the question: they fill the
    # search's best hits, but none is evidence, so none lifts its neighbours much
    for s in range(8):
        msgs = [Message(content=" ".join(rng.sample(WORDS, 8) + [rng.choice(ASKED)]),
                        speaker="user" if i % 2 == 0 else "assistant", ref=f"f{s}-{i}")
                for i in range(30)]
        sid = f"filler-{s}"
        remember(rt, msgs, session_id=sid, session_time=f"2026-03-0{s + 1}T10:00:00Z",
                 namespace="default")
    long_reply = (PROSE * 12)[:3000]
    assert len(long_reply) > WHOLE_CHARS
    msgs = [Message(content="I hid the spare key of the lighthouse under the blue flowerpot.",
                    speaker="user", ref="e-0"),
            Message(content="Noted: the spare key of the lighthouse is hidden under the blue "
                            "flowerpot.", speaker="assistant", ref="e-1"),
            Message(content=long_reply, speaker="assistant", ref="e-2")]
    remember(rt, msgs, session_id="evidence", session_time="2026-03-20T10:00:00Z",
             namespace="default")
    assert rt.curation.wait_idle(120)
    yield rt
    rt.close()


@pytest.mark.parametrize("strategy", ["wiki", "workspace"])
def test_a_long_reply_beside_the_evidence_is_not_quoted_unless_the_search_found_it(rt, strategy):
    out = recall(rt, "Where is the spare key of the lighthouse hidden?", strategy, "default", 2000)
    refs = [s.ref for s in out.sources]
    assert "e-0" in refs
    assert "e-2" not in refs
    assert PROSE[:60] not in out.context
    # asked about what the long reply itself says, its passage is found and quoted
    out = recall(rt, "Why does the deploy pipeline build the container twice?", strategy,
                 "default", 2000)
    assert "e-2" in [s.ref for s in out.sources]
    assert "builds the container twice" in out.context
