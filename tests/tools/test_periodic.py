"""Consolidation every N curated sessions (TRIMEM_CONSOLIDATE_EVERY_SESSIONS): off by default,
counted per namespace in the store (so the count survives a restart), run by the worker."""

from __future__ import annotations

import pytest
from mcp import Client

from helpers import payload, turns
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.tools.periodic import meta_key

pytestmark = pytest.mark.anyio


@pytest.fixture
def make_server(home, tmp_path_factory):
    made = []

    def make(**kw):
        made.append(build_server(Settings(home=str(home), **kw)))
        return made[-1]

    yield make
    for s in made:
        s.runtime.close()


async def remember(server, session_id: str, *texts: str, prefix: str = "t") -> None:
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"messages": turns(*texts, prefix=session_id + prefix),
                                               "session_id": session_id,
                                               "session_time": "2024-03-01T10:00:00Z"}))
    assert server.runtime.curation.wait_idle(120)
    assert not server.runtime.curation.failures


def periodic_runs(server, namespace: str = "default") -> list[dict]:
    log = server.runtime.space(namespace).log.audit_log(limit=1000)
    return [e for e in log if e["op"] == "consolidate" and e["detail"].get("trigger") != "request"]


async def test_every_two_sessions_consolidates_once(make_server):
    server = make_server(consolidate_every_sessions=2)
    periodic = server.runtime.curation.periodic
    await remember(server, "s1", "Ana moved to Lisbon in May.", "She works at a bakery there.")
    await remember(server, "s1", "The bakery opens at six.", prefix="u")  # same session again
    assert periodic.pending("default") == ["s1"] and periodic_runs(server) == []

    await remember(server, "s2", "Ben adopted a beagle puppy.", "The puppy is called Biscuit.")
    runs = periodic_runs(server)
    assert len(runs) == 1 and runs[0]["detail"]["trigger"] == "every 2 sessions"
    assert runs[0]["detail"]["min_cluster_size"] == 10
    assert any(op["op"] == "optimize" for op in runs[0]["detail"]["operations"])
    assert periodic.pending("default") == []       # counting starts again

    await remember(server, "s3", "Ana bought a bicycle.")
    assert len(periodic_runs(server)) == 1 and periodic.pending("default") == ["s3"]


async def test_off_by_default(make_server):
    server = make_server()
    assert server.runtime.config.consolidate_every_sessions == 0
    for sid in ("s1", "s2", "s3"):
        await remember(server, sid, f"message of {sid}", "another one")
    assert periodic_runs(server) == []
    assert [e for e in server.runtime.space("default").log.audit_log(limit=1000)
            if e["op"] == "consolidate"] == []
    assert server.runtime.store.get_meta(meta_key("default")) is None   # nothing counted


async def test_the_count_survives_a_new_server_and_stays_per_namespace(make_server, monkeypatch):
    first = make_server(consolidate_every_sessions=2)
    await remember(first, "s1", "Ana moved to Lisbon in May.")
    assert first.runtime.curation.periodic.pending("default") == ["s1"]
    first.runtime.close()

    monkeypatch.setenv("TRIMEM_CONSOLIDATE_EVERY_SESSIONS", "2")   # the setting, as users set it
    second = make_server()
    assert second.runtime.config.consolidate_every_sessions == 2
    async with Client(second) as c:                # another namespace does not add to the count
        payload(await c.call_tool("remember", {"messages": turns("elsewhere"), "session_id": "o1",
                                               "namespace": "other"}))
    assert second.runtime.curation.wait_idle(120)
    assert periodic_runs(second) == [] and periodic_runs(second, "other") == []
    await remember(second, "s2", "Ben adopted a beagle puppy.")
    assert len(periodic_runs(second)) == 1 and periodic_runs(second, "other") == []
    assert second.runtime.curation.periodic.pending("other") == ["o1"]
