"""Streamable HTTP transport with a bearer token and DNS-rebinding protection.

``trimem serve --http`` binds 127.0.0.1 by default. Every request must carry
``Authorization: Bearer <token>`` (401 otherwise, compared in constant time). The token comes from
``TRIMEM_HTTP_TOKEN``, or is generated on first start, saved beside the data (``http_token``,
mode 0600) and printed once to stderr. The MCP SDK's transport security checks the ``Host`` and
``Origin`` headers against the loopback names (421 / 403 otherwise), as the MCP specification asks
of local servers, so a web page the user visits cannot drive the server through DNS rebinding.
For access from other machines put it behind a TLS-terminating reverse proxy (see README).

Hardening: ``Host`` and ``Origin`` are parsed strictly and their host part must equal an allowed
name (the SDK's own check is a prefix match, which let ``Host: 127.0.0.1:8765 evil.com``
through); a client must finish sending each request (headers and body) within
``REQUEST_READ_TIMEOUT_S`` or its connection is closed, so stalled sockets cannot pile up; a token
file readable by others is made private (0600) with a warning before it is used; a request whose
id is not a string or an integer gets an error, not 202 (``server/request_ids.py``).
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import secrets
import stat
import sys
from pathlib import Path
from typing import cast

from mcp.server.transport_security import TransportSecuritySettings
from uvicorn.protocols.http.h11_impl import H11Protocol
import h11
import platformdirs
import uvicorn

from .request_ids import InvalidIdCheck

log = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
REQUEST_READ_TIMEOUT_S = 10.0
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(?::(\d{1,5}))?")


def token_path(settings) -> Path:
    if "://" in settings.home:
        return Path(platformdirs.user_config_dir("trimem", appauthor=False)) / "http_token"
    return Path(settings.home) / "http_token"


def load_or_create_token(settings) -> str:
    if settings.http_token:
        return settings.http_token
    path = token_path(settings)
    if path.exists():
        _make_private(path)
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    print(f"trimem: generated an HTTP bearer token (saved in {path}):\n  {token}", file=sys.stderr)
    return token


def _make_private(path: Path) -> None:
    """A token file others can read is no secret: make it 0600 (or refuse to start)."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        try:
            os.chmod(path, 0o600)
        except OSError as exc:
            raise SystemExit(f"trimem: {path} is readable by others (mode {mode:04o}) and cannot "
                             f"be made private ({exc}); fix its permissions or delete it") from exc
        log.warning("%s was readable by others (mode %04o): made it private (0600); delete it to "
                    "get a new token if others may have read it", path, mode)


def host_name(value: str) -> str | None:
    """The lower-cased name of a ``Host`` value ``name[:port]``, or None unless it is exactly
    that (no spaces, no userinfo, no path, a numeric port)."""
    m = _HOST.fullmatch(value)
    if m is None or (m.group(2) is not None and int(m.group(2)) > 65535):
        return None
    return m.group(1).lower()


def origin_name(value: str) -> str | None:
    """The lower-cased host name of an ``Origin`` (``scheme://host[:port]`` and nothing else)."""
    m = re.fullmatch(r"(https?)://([^/?#@\s]+)", value, flags=re.I)
    return host_name(m.group(2)) if m else None


class HostCheck:
    """ASGI middleware: 421 unless ``Host`` names an allowed host exactly; 403 unless ``Origin``
    (when sent) does too."""

    def __init__(self, app, names: list[str]):
        self.app = app
        self.names = {host_name(n) or n.lower() for n in names}   # "name:port" -> "name"

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = scope.get("headers") or []
            hosts = [v for k, v in headers if k == b"host"]
            origins = [v for k, v in headers if k == b"origin"]
            host = hosts[0].decode("latin-1") if len(hosts) == 1 else ""
            if host_name(host) not in self.names:
                return await _refuse(send, 421, b"Invalid Host header\n")
            if len(origins) > 1 or (origins and
                                    origin_name(origins[0].decode("latin-1")) not in self.names):
                return await _refuse(send, 403, b"Invalid Origin header\n")
        await self.app(scope, receive, send)


async def _refuse(send, status: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """ASGI middleware: 401 unless the request carries the bearer token."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            got = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"text/plain"), (b"www-authenticate", b'Bearer realm="trimem"')]})
                await send({"type": "http.response.body",
                            "body": b"missing or wrong bearer token (see TRIMEM_HTTP_TOKEN)\n"})
                return
        await self.app(scope, receive, send)


def allowed_names(settings, host: str) -> list[str]:
    """The names a request's Host / Origin may carry: loopback, the served host, the settings'."""
    names = list(LOOPBACK) + ([host] if host not in LOOPBACK and host != "0.0.0.0" else [])
    return names + [h for h in settings.http_allowed_hosts if h not in names]


def guarded(app, settings, host: str):
    """What every HTTP surface of trimem (``serve --http``, ``view``) checks before ``app``:
    Host / Origin exactly (DNS rebinding), then the bearer token."""
    return HostCheck(BearerAuth(app, load_or_create_token(settings)), allowed_names(settings, host))


def transport_security(settings, host: str):
    """The MCP SDK's own Host / Origin rules for its transport (inside :func:`guarded`)."""
    names = allowed_names(settings, host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in names] + names,
        allowed_origins=[f"{scheme}://{n}:*" for n in names for scheme in ("http", "https")]
        + [f"{scheme}://{n}" for n in names for scheme in ("http", "https")])


def http_app(server, settings, host: str):
    security = transport_security(settings, host)
    app = server.streamable_http_app(transport_security=security, host=host)
    return guarded(InvalidIdCheck(app), settings, host)


def slow_client_protocol():
    """uvicorn's h11 protocol, closing a connection whose request (headers and body) is not
    complete ``REQUEST_READ_TIMEOUT_S`` after the connection opened or the previous response
    ended. uvicorn itself only times out idle keep-alive connections."""
    class SlowClientGuard(H11Protocol):
        _read_timer = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self):
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc):
            if self._read_timer is not None:
                self._read_timer.cancel()
            super().connection_lost(exc)

        def _arm(self):
            if self._read_timer is not None:
                self._read_timer.cancel()
            self._read_timer = self.loop.call_later(REQUEST_READ_TIMEOUT_S, self._read_timeout)

        def _read_timeout(self):
            self._read_timer = None
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
                log.info("closing a connection from %s: request not complete after %.0f s",
                         self.client, REQUEST_READ_TIMEOUT_S)
                self.transport.close()

    return SlowClientGuard


def url_of(host: str, port: int) -> str:
    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{name}:{port}/mcp"


def serve_http(server, settings, host: str, port: int, graceful_s: float = 0.5) -> None:
    """Serve until a signal (uvicorn catches SIGINT / SIGTERM, closes connections within
    ``graceful_s`` and re-raises the signal for ``server/lifecycle.py`` to finish)."""
    if host not in LOOPBACK:
        log.warning("serving on %s: anyone who can reach it and knows the token can read memory; "
                    "put it behind TLS", host)
    app = http_app(server, settings, host)
    print(f"trimem: serving MCP over streamable HTTP at {url_of(host, port)}", file=sys.stderr,
          flush=True)
    run_uvicorn(app, host, port, graceful_s)


def uvicorn_options(graceful_s: float | None = None) -> dict:
    """How every HTTP surface of trimem (``serve --http``, ``view``) is served by uvicorn: with
    :func:`slow_client_protocol` (the request guard) and warnings only in the log."""
    # uvicorn annotates the graceful timeout as int but waits with asyncio (any float works)
    return {"log_level": "warning", "http": slow_client_protocol(),
            "timeout_graceful_shutdown": cast(int, graceful_s)}


def run_uvicorn(app, host: str, port: int, graceful_s: float | None = None) -> None:
    uvicorn.run(app, host=host, port=port, **uvicorn_options(graceful_s))
