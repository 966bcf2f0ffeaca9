"""Tool rows (what a host ran, speaker ``tool``, as capture stores them) are sources like any
other but nobody's words: they never vote on who a speaker is, curation leaves them out, and a
search still finds them.

A coding session made up here, stored through the remember tool's code into a real LanceDB store
with the packaged embedder: the user asks, a tool call and its output come in between, and the
assistant answers addressing the user by name. Before tool rows were set apart, the name voted
for the tool (the speaker just before the reply), and the threads, snapshots and memories of the
session quoted tool output.
"""

from __future__ import annotations

import pytest

from trimem.server.settings import Settings
from trimem.strategies.aliases import namespace_speakers, speaker_aliases
from trimem.strategies.wiki.store import SNAP
from trimem.strategies.workspace.store import THREADS
from trimem.tools.recall import recall
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

EXCHANGES = [
    ("Can you check why the nightly export failed?", "[tool Bash] {\"command\":\"tail export.log\"}",
     "ERROR quota exceeded on bucket archive-eu while writing part 17 of 40",
     "Sure thing, Dana! The export stopped at part 17 because the bucket ran out of quota."),
    ("Then raise the quota to 2 TB and rerun it.", "[tool Bash] {\"command\":\"quota set 2TB\"}",
     "OK quota for archive-eu is now 2 TB; rerun scheduled at 02:00",
     "Done, Dana. The quota is 2 TB now and the export runs again tonight at two."),
    ("Thanks. Remind me tomorrow to check it.", "[tool Todo] {\"text\":\"check export\"}",
     "added: check export (due tomorrow)",
     "I added it to the list, Dana: checking the export is due tomorrow."),
]


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    rt = Runtime(Settings(home=str(tmp_path_factory.mktemp("home"))).to_config())
    for n in range(2):
        msgs = []
        for i, (ask, call, out, reply) in enumerate(EXCHANGES):
            msgs += [Message(content=ask, speaker="user", ref=f"{n}-{i}-u"),
                     Message(content=call, speaker="tool", ref=f"{n}-{i}-c"),
                     Message(content=out, speaker="tool", ref=f"{n}-{i}-o"),
                     Message(content=reply, speaker="assistant", ref=f"{n}-{i}-a")]
        remember(rt, msgs, session_id=f"s{n}", session_time=f"2026-03-0{n + 1}T09:00:00")
    assert rt.curation.wait_idle(180)
    yield rt
    rt.close()


def test_a_name_said_after_a_tool_row_votes_for_the_person_not_the_tool(rt):
    env = rt.env("default")
    assert "tool" not in namespace_speakers(env.ns, env.space)
    aliases = speaker_aliases(env.ns, env.space)
    assert "Dana" in aliases.get("user", set())
    assert not aliases.get("tool")


def test_curation_leaves_tool_rows_out(rt):
    space = rt.space("default")
    tool_ids = {r.id for r in space.sources.all() if r.speaker == "tool"}
    assert len(tool_ids) == 12
    cited: dict[str, set[str]] = {}
    for table in (THREADS, SNAP):
        if space.table(table) is not None:
            cited[table] = {i for r in space.derived.rows(table, columns=["source_ids"])
                            for i in r["source_ids"] or []}
    every = {r.id for r in space.sources.all()}
    cited["memories"] = {i for m in space.memories.citing(every) for i in m.source_ids or []}
    assert cited[THREADS] and cited[SNAP] and cited["memories"]   # curation ran
    for table, ids in cited.items():
        assert not ids & tool_ids, f"{table} cites tool rows"


def test_a_search_still_finds_tool_output(rt):
    out = recall(rt, "which bucket ran out of quota?", "plain", budget_tokens=300)
    assert any(s.speaker == "tool" and "archive-eu" in s.text for s in out.sources)
