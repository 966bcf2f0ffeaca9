"""``auto``'s voters rank for twice the caller's budget but weigh a long message by the excerpt
the caller's context will quote (real store, real embedder): at 500 tokens a voter that chose a
long reply quotes at most 500 characters of it, as the fused context will, not the 1,000 its own
budget would allow, so the reply competes for the voter's room at its real cost."""

from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies.auto.vote import vote
from trimem.strategies.base import RecallRequest
from trimem.strategies.render import quote_width
from trimem.tools.remember import Message, remember

PARA = ("The release train of the ledger service leaves every second Tuesday; a change that "
        "misses it waits two weeks, so the team merges small changes early in the cycle. ")


def test_each_voter_quotes_a_long_reply_at_its_callers_width(tmp_path):
    server = build_server(Settings(home=str(tmp_path / "home"), curation=False))
    rt = server.runtime
    reply = PARA * 10 + "The ledger service's audit export runs on port 8443. " + PARA * 10
    remember(rt, [Message(content="How is the ledger service released?", speaker="user"),
                  Message(content=reply, speaker="assistant")],
             session_id="s1", session_time="2026-03-02T10:00:00Z", namespace="default")
    env = rt.env("default")
    request = RecallRequest(query="Which port does the ledger audit export use?",
                            budget_tokens=500)
    runs, failed, _, _ = vote(env, request, ["plain", "workspace"], 2.0)
    assert not failed
    quoted = [(s.start, s.end) for out in runs.values() for s in out.sources
              if s.start is not None and s.end is not None]
    assert quoted, "no voter chose the long reply"
    assert all(end - start <= quote_width(500) for start, end in quoted)
