"""`trimem serve --http`: bearer token, Host/Origin checks, and the same tools."""

from __future__ import annotations

import json
import os
import select
import socket
import stat
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


def start(home: Path):
    port = free_port()
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
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.1)
    return proc, port


def stop(proc) -> str:
    proc.terminate()
    proc.wait(timeout=20)
    return proc.stderr.read()


@pytest.fixture
def http_server(tmp_path):
    home = tmp_path / "home"
    proc, port = start(home)
    token = (home / "http_token").read_text().strip()
    yield f"http://127.0.0.1:{port}/mcp", token, home
    assert token in stop(proc)          # printed once, on first start


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
    # the memory folder is its user's alone: 0700, and nothing in it readable by others
    _, _, home = http_server
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    shared = [str(p.relative_to(home)) for p in home.rglob("*") if p.stat().st_mode & 0o077]
    assert not shared, shared[:5]


def raw_status(port: int, host: str, origin: str | None = None, token: str = "") -> int:
    """The status of one POST /mcp sent byte for byte as given (no client normalises it)."""
    body = json.dumps(INIT).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            + (f"Origin: {origin}\r\n" if origin is not None else "")
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode("latin-1") + body)
        return int(s.recv(64).split()[1])


BAD_HOSTS = ["127.0.0.1:{port} evil.com", "localhost:{port}@evil.com", "localhost:{port}.evil.com",
             "127.0.0.1:{port}/evil", "localhost:evil.com", "127.0.0.1:{port}:{port}",
             "evil.com:{port}", "127.0.0.1.evil.com:{port}", "localhost:{port}, evil.com", ""]
BAD_ORIGINS = ["http://localhost:3000@evil.com", "http://localhost:3000.evil.com",
               "http://localhost:3000 evil.com", "http://localhost.evil.com", "http://localhost/x",
               "null", "file://localhost"]


def test_host_and_origin_must_match_exactly(http_server):
    url, token, _ = http_server
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    accepted = [h for h in BAD_HOSTS if raw_status(port, h.format(port=port), token=token) != 421]
    assert not accepted, accepted
    accepted = [o for o in BAD_ORIGINS
                if raw_status(port, f"127.0.0.1:{port}", o, token=token) != 403]
    assert not accepted, accepted
    for host in (f"127.0.0.1:{port}", "localhost", f"[::1]:{port}"):
        assert raw_status(port, host, "http://localhost:3000", token=token) == 200, host
    print(f"refused {len(BAD_HOSTS)} hosts and {len(BAD_ORIGINS)} origins")


def test_slow_clients_are_cut_off(http_server):
    """150 sockets stuck in their headers and 30 in their body are closed by the server, and a
    normal request is still served meanwhile."""
    import trimem.server.http as http

    timeout = getattr(http, "REQUEST_READ_TIMEOUT_S", 10.0)
    url, token, _ = http_server
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    socks = []
    for i in range(180):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i < 150:
            s.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        else:
            s.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer "
                      f"{token}\r\nContent-Type: application/json\r\nAccept: application/json, "
                      "text/event-stream\r\nContent-Length: 5000\r\n\r\n{\"jsonrpc\"".encode())
        socks.append(s)
    assert raw_status(port, f"127.0.0.1:{port}", token=token) == 200
    deadline = time.monotonic() + timeout + 10
    open_ = list(socks)
    while open_ and time.monotonic() < deadline:
        ready, _, _ = select.select(open_, [], [], 0.5)
        for s in ready:
            try:
                while s.recv(4096):
                    pass
            except (ConnectionResetError, BlockingIOError, socket.timeout):
                pass
            open_.remove(s)
    for s in socks:
        s.close()
    assert not open_, f"{len(open_)} of 180 stalled connections still open"


def test_a_token_file_others_can_read_is_made_private(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "http_token").write_text("shared-token\n")
    os.chmod(home / "http_token", 0o644)
    proc, port = start(home)
    try:
        assert raw_status(port, f"127.0.0.1:{port}", token="shared-token") == 200
        assert stat.S_IMODE((home / "http_token").stat().st_mode) == 0o600
    finally:
        err = stop(proc)
    assert "readable by others" in err


ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}


def test_a_request_with_an_invalid_id_gets_an_error_not_silence(http_server):
    """Over HTTP, both transports: a request whose id is not a string or an integer is answered
    with -32600 and id null (server/request_ids.py), not taken for a notification."""
    url, token, _ = http_server
    auth = dict(HDRS, authorization=f"Bearer {token}")
    init = httpx2.post(url, json=INIT, headers=auth)
    assert init.status_code == 200
    legacy = dict(auth, **{"mcp-protocol-version": "2025-11-25"},
                  **({"mcp-session-id": init.headers["mcp-session-id"]}
                     if "mcp-session-id" in init.headers else {}))
    silent = []
    for bad in ("1.5", "1e3", "true", "null", "{}", "[]"):
        for headers, params in ((legacy, {}), (auth, {"_meta": ENVELOPE})):
            body = '{"jsonrpc": "2.0", "id": %s, "method": "tools/list", "params": %s}' % (
                bad, json.dumps(params))
            r = httpx2.post(url, content=body, headers=headers)
            try:
                got = r.json()
            except ValueError:   # 202 Accepted: no body
                got = None
            if not (r.status_code == 400 and got and got["id"] is None
                    and got["error"]["code"] == -32600):
                silent.append((bad, "legacy" if params == {} else "modern", r.status_code,
                               r.text[:80]))
    assert not silent, silent
    ok = httpx2.post(url, headers=legacy, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert ok.status_code == 200 and "remember" in ok.text
