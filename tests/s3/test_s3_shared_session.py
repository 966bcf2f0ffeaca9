"""Two stores on one bucket (each with its own in-process lock, as two machines' processes have)
appending exchanges to one session of one new namespace at the same moment: every message gets
its own position, the session one row counting them all, the namespace one registry entry.
Without a lock across processes the two numbered their messages after the same stored count
(twins at one position) and both inserted the new session's row and the namespace's entry."""

from __future__ import annotations

import threading

import pytest

from trimem.server.settings import Settings
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

pytestmark = pytest.mark.slow

EXCHANGES = 6


def test_two_stores_append_to_one_session(s3_env):
    home = s3_env["TRIMEM_HOME"]
    runtimes = [Runtime(Settings(home=home, curation=False).to_config()) for _ in range(2)]
    for rt in runtimes:
        rt.embed(["warm up"])
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def write(me: int) -> None:
        try:
            start.wait()
            for k in range(EXCHANGES):
                remember(runtimes[me], [
                    Message(content=f"writer {me} asks about the shared garden plan, item {k}",
                            speaker="user", ref=f"w{me}-{k}-u"),
                    Message(content=f"writer {me} hears the answer about item {k}",
                            speaker="assistant", ref=f"w{me}-{k}-a")], "shared", None, "team")
        except BaseException as exc:   # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for rt in runtimes:
        rt.close()
    assert not errors
    rt = Runtime(Settings(home=home, curation=False).to_config())
    try:
        space = rt.space("team")
        rows = space.sources.by_session("shared")
        assert len({r.ref for r in rows}) == len(rows) == 2 * 2 * EXCHANGES
        assert sorted(r.seq for r in rows) == list(range(len(rows)))      # no twins, no gaps
        for me in range(2):                                               # each writer's order
            mine = [r.ref for r in rows if (r.ref or "").startswith(f"w{me}-")]
            assert mine == [f"w{me}-{k}-{x}" for k in range(EXCHANGES) for x in "ua"]
        sessions = [s for s in space.sessions.all() if s.session_id == "shared"]
        assert [s.n_messages for s in sessions] == [len(rows)]
        registry = rt.store.open_table("_namespaces").search().limit(None).to_list()
        assert [r["name"] for r in registry] == ["team"]
    finally:
        rt.close()
