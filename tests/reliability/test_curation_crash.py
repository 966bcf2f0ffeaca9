"""The host's model's curation of a session replaces the heuristic one: a process killed
(SIGKILL) right after the first commit of that replacement leaves the session with one curation,
the old or the new, never both (both were recalled as two sets of memories of one session)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from trimem.server.settings import Settings
from trimem.strategies.hybrid.store import session_rows
from trimem.tools.runtime import Runtime

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL")

CHILD = textwrap.dedent("""
    import os, signal, sys
    from trimem.server.settings import Settings
    from trimem.storage.memories import Memories
    from trimem.strategies.hybrid.items import Episode, Fact
    from trimem.strategies.hybrid.store import replace_session, session_rows
    from trimem.tools.remember import Message, remember
    from trimem.tools.runtime import Runtime

    rt = Runtime(Settings(home=sys.argv[1]).to_config())
    out = remember(rt, [Message(content="We will plan the trip to the coast in May.",
                                speaker="user", ref="r1"),
                        Message(content="Great, the coast it is, and Ana drives.",
                                speaker="assistant", ref="r2")], "s1", None, "default")
    rt.curation.wait_idle()   # the heuristic curation first, as a host's answer comes later
    env = rt.env("default")
    assert {r.origin for r in session_rows(env.space, "s1")} == {"heuristic"}
    real = Memories.add

    def add_then_die(self, rows, *a, **kw):   # the first commit lands, then the process dies
        real(self, rows, *a, **kw)
        os.kill(os.getpid(), signal.SIGKILL)

    Memories.add = add_then_die
    eps = [Episode(title="t", summary="a trip to the coast", details="they plan a May trip",
                   source_ids=out.source_ids, refs=["r1", "r2"])]
    tps = [Fact(subject="Ana", relation="drives to", object="the coast", context="c",
                source_ids=out.source_ids[1:], refs=["r2"], text="Ana drives to the coast")]
    replace_session(env, "s1", eps, tps, "sampling:host-model")
    print("not killed", flush=True)
""")


def test_a_kill_during_the_replacement_leaves_one_curation(tmp_path):
    home = tmp_path / "home"
    done = subprocess.run([sys.executable, "-c", CHILD, str(home)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == -9, done.stderr[-2000:]
    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    try:
        origins = sorted(r.origin or "" for r in session_rows(rt.space("default"), "s1"))
    finally:
        rt.close(10)
    print("the session's curation after the kill:", origins)
    assert origins and len(set(origins)) == 1, origins
