"""Shared fixtures: a real LanceDB store in a temp folder and the real server, in memory."""

from __future__ import annotations

import pytest

from trimem.server.app import build_server
from trimem.server.settings import Settings


@pytest.fixture
def anyio_backend():
    """Async tests use anyio's plugin (``pytestmark = pytest.mark.anyio``): unlike
    pytest-asyncio it runs a fixture's setup and teardown in one task, as the MCP client needs."""
    return "asyncio"


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def server(home, tmp_path_factory):
    return build_server(Settings(home=str(home)))


@pytest.fixture
async def client(server):
    from mcp import Client

    async with Client(server) as c:
        yield c
