"""`trimem serve --http`: bearer token, Host/Origin checks, and the same tools."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from helpers import payload, turns

pytestmark = pytest.mark.anyio
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
HDRS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(tmp_path):
    port, home = free_port(), tmp_path / "home"
    env = dict(os.environ, TRIMEM_HOME=str(home))
    env.pop("TRIMEM_HTTP_TOKEN", None)
    trimem = str(Path(sys.executable).parent / "trimem")
    proc = subprocess.Popen([trimem, "serve", "--http", "--port", str(port)], env=env,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.1)
    token = (home / "http_token").read_text().strip()
    yield f"http://127.0.0.1:{port}/mcp", token, home
    proc.terminate()
    proc.wait(timeout=20)
    assert token in proc.stderr.read()          # printed once, on first start


def test_requests_without_the_token_get_401(http_server):
    url, token, home = http_server
    assert oct((home / "http_token").stat().st_mode & 0o777) == "0o600"
    assert httpx2.post(url, json=INIT, headers=HDRS).status_code == 401
    bad = dict(HDRS, authorization="Bearer not-the-token")
    assert httpx2.post(url, json=INIT, headers=bad).status_code == 401


def test_foreign_origin_and_host_are_refused(http_server):
    url, token, _ = http_server
    auth = dict(HDRS, authorization=f"Bearer {token}")
    assert httpx2.post(url, json=INIT, headers=dict(auth, origin="http://evil.example")).status_code == 403
    assert httpx2.post(url, json=INIT, headers=dict(auth, host="evil.example:80")).status_code == 421
    ok = httpx2.post(url, json=INIT, headers=dict(auth, origin="http://localhost:3000"))
    assert ok.status_code == 200


async def test_same_tools_over_http(http_server):
    url, token, _ = http_server
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=120)
    async with http, Client(streamable_http_client(url, http_client=http)) as c:
        names = {t.name for t in (await c.list_tools()).tools}
        assert names == {"remember", "recall", "consolidate", "explain", "forget"}
        payload(await c.call_tool("remember", {"messages": turns("The spare key is under the mat.")}))
        rec = payload(await c.call_tool("recall", {"query": "where is the spare key?"}))
        assert rec["sources"][0]["ref"] == "t1"
