"""A full or read-only TRIMEM_HOME: a clear tool error, nothing half-written, the server stays up.

These need mount(8) (root, as on the CI machine); elsewhere they are skipped with the reason.
"""

from __future__ import annotations

import subprocess

import pytest

from helpers import error_text, payload, turns
from trimem.server.app import build_server
from trimem.server.settings import Settings

pytestmark = pytest.mark.anyio


def mount(*args: str) -> None:
    res = subprocess.run(["mount", *args], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount here: {res.stderr.strip()}")


@pytest.fixture
def tiny_home(tmp_path):
    home = tmp_path / "tiny"
    home.mkdir()
    mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(home))
    yield home
    subprocess.run(["umount", "-l", str(home)], check=False)


@pytest.fixture
def ro_home(tmp_path):
    src, home = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    home.mkdir()
    mount("--bind", str(src), str(home))
    yield home
    subprocess.run(["umount", "-l", str(home)], check=False)


async def test_full_disk_is_a_clear_error_and_the_server_stays_up(tiny_home, tmp_path):
    from mcp import Client

    server = build_server(Settings(home=str(tiny_home)))
    acked, error = [], None
    async with Client(server) as c:
        for i in range(400):
            msgs = [{"content": f"note {i}.{k}: lorem ipsum dolor sit amet", "ref": f"{i}.{k}"}
                    for k in range(20)]
            res = await c.call_tool("remember", {"messages": msgs, "session_id": f"s{i}"})
            if res.is_error:
                error = error_text(res)
                break
            acked += res.structured_content["source_ids"]
        assert error is not None and "is full" in error and "nothing was stored" in error
        assert acked
        out = payload(await c.call_tool("recall", {"query": "lorem", "budget_tokens": 500}))
        assert out["sources"]                      # still answering
    rows = server.runtime.space("default").sources.all()
    assert {r.id for r in rows} == set(acked)  # nothing half-written, nothing lost


async def test_read_only_home(ro_home, tmp_path):
    from mcp import Client

    server = build_server(Settings(home=str(ro_home)))
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"messages": turns("The boat is called Marlin.")}))
    mount("-o", "remount,bind,ro", str(ro_home))
    server = build_server(Settings(home=str(ro_home)))
    async with Client(server) as c:
        err = error_text(await c.call_tool("remember", {"messages": turns("More.", prefix="m")}))
        assert "not writable" in err
        out = payload(await c.call_tool("recall", {"query": "boat name"}))
        assert "Marlin" in out["context"] and "not logged" in out["route_reason"]
