"""Everything trimem writes in a memory folder is its user's alone (files 0600, folders 0700):
LanceDB's tables, lock files, forget stamps, the capture hook's markers, cursors, digests and
log, after remember, recall, explain, forget and consolidate, in a process that started with a
usual umask (022) and uses trimem as a library, and in the hook processes."""

from __future__ import annotations

import os
import stat

import pytest
from hookrun import hook_env, run_hook, settle
from mcp import Client

from helpers import payload
from trimem.bench.cc_transcript import Transcript
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = [pytest.mark.anyio, pytest.mark.slow,
              pytest.mark.skipif(os.name != "posix", reason="POSIX modes")]


def shared(home) -> list[str]:
    """Paths under ``home`` that anyone but their owner may read, write or enter."""
    out = []
    for root, dirs, files in os.walk(home):
        for name in dirs + files:
            path = os.path.join(root, name)
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            if mode & 0o077:
                out.append(f"{os.path.relpath(path, home)} {oct(mode)}")
    return out


async def test_every_file_and_folder_in_a_memory_folder_is_private(tmp_path):
    home = tmp_path / "home"
    old = os.umask(0o022)
    try:
        server = build_server(Settings(home=str(home)))
        async with Client(server) as c:
            for s in ("s1", "s2"):
                payload(await c.call_tool("remember", {"namespace": "main", "session_id": s,
                        "messages": [{"content": f"In {s} we fixed the {s} bike brakes.",
                                      "ref": f"{s}-1"},
                                     {"content": "The blue bike needs new tyres.",
                                      "ref": f"{s}-2"}]}))
            rec = payload(await c.call_tool("recall", {"query": "bike", "namespace": "main"}))
            payload(await c.call_tool("explain", {"id": rec["recall_id"], "namespace": "main"}))
            payload(await c.call_tool("forget", {"refs": ["s1-1"], "namespace": "main"}))
            payload(await c.call_tool("consolidate", {"namespace": "main"}))
        with server.runtime.store.write_lock("main") as held:   # a lock file, while held
            assert held is not None and held.path.exists()
            held_shared = shared(home)
        server.runtime.close(60)
        env = hook_env(home, tmp_path, TRIMEM_HOOK_NAMESPACE="cap")
        t = Transcript(path=tmp_path / "t.jsonl", session_id="c1", cwd=str(tmp_path))
        t.user("Where did we leave the bike pump?", "2026-11-10T10:00:00Z")
        t.assistant("In the garage, on the shelf by the door.", "2026-11-10T10:00:05Z")
        assert run_hook(t.hook_input("Stop"), env).returncode == 0
        settle(home)
        assert run_hook(t.hook_input("SessionStart", source="startup"), env).returncode == 0
    finally:
        os.umask(old)
    assert (home / "_capture" / "drain.log").exists() and (home / "_marks").is_dir()
    assert not held_shared, held_shared[:10]
    found = shared(home)
    assert not found, found[:10]
