"""Cold start unchanged: building the server, remembering, curating and a hybrid recall import
neither umap, hdbscan nor numba (they load only when consolidation runs)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CODE = textwrap.dedent("""
    import asyncio, sys
    from mcp import Client
    from trimem.server.app import build_server
    from trimem.server.settings import Settings

    async def main(home):
        server = build_server(Settings(home=home))
        heavy = {"umap", "hdbscan", "numba", "pynndescent"}
        assert not heavy & set(sys.modules), heavy & set(sys.modules)
        async with Client(server) as c:
            await c.call_tool("remember", {"messages": [
                {"content": "I adopted a puppy named Biscuit yesterday.", "speaker": "Ben"},
                {"content": "Biscuit is a beagle and loves long walks.", "speaker": "Ben"}],
                "session_id": "s", "session_time": "2023-05-08T10:00:00"})
            assert server.runtime.curation.wait_idle(60)
            res = await c.call_tool("recall", {"query": "Ben's puppy", "strategy": "hybrid"})
            assert not res.is_error and res.structured_content["sources"]
        loaded = sorted(heavy & set(sys.modules))
        print("LOADED", loaded)
        sys.exit(1 if loaded else 0)

    asyncio.run(main(sys.argv[1]))
""")


def test_umap_hdbscan_numba_not_imported_before_consolidate(tmp_path, tmp_path_factory):
    run = subprocess.run([sys.executable, "-c", CODE, str(tmp_path / "home")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "LOADED []" in run.stdout
