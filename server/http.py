"""Streamable HTTP transport with a bearer token and DNS-rebinding protection.

``trimem serve --http`` binds 127.0.0.1 by default. Every request must carry
``Authorization: Bearer <token>`` (401 otherwise, compared in constant time). The token comes from
``TRIMEM_HTTP_TOKEN``, or is generated on first start, saved beside the data (``http_token``,
mode 0600) and printed once to stderr. The MCP SDK's transport security checks the ``Host`` and
``Origin`` headers against the loopback names (421 / 403 otherwise), as the MCP specification asks
of local servers, so a web page the user visits cannot drive the server through DNS rebinding.
For access from other machines put it behind a TLS-terminating reverse proxy (see README).
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import sys
from pathlib import Path

log = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def token_path(settings) -> Path:
    if "://" in settings.home:
        import platformdirs

        return Path(platformdirs.user_config_dir("trimem", appauthor=False)) / "http_token"
    return Path(settings.home) / "http_token"


def load_or_create_token(settings) -> str:
    if settings.http_token:
        return settings.http_token
    path = token_path(settings)
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    print(f"trimem: generated an HTTP bearer token (saved in {path}):\n  {token}", file=sys.stderr)
    return token


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


def transport_security(settings, host: str):
    """The Host / Origin rules (DNS-rebinding protection) of every HTTP surface of trimem."""
    from mcp.server.transport_security import TransportSecuritySettings

    names = list(LOOPBACK) + ([host] if host not in LOOPBACK and host != "0.0.0.0" else [])
    names += [h for h in settings.http_allowed_hosts if h not in names]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in names] + names,
        allowed_origins=[f"{scheme}://{n}:*" for n in names for scheme in ("http", "https")]
        + [f"{scheme}://{n}" for n in names for scheme in ("http", "https")])


def http_app(server, settings, host: str):
    security = transport_security(settings, host)
    app = server.streamable_http_app(transport_security=security, host=host)
    return BearerAuth(app, load_or_create_token(settings))


def url_of(host: str, port: int) -> str:
    name = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{name}:{port}/mcp"


def serve_http(server, settings, host: str, port: int, graceful_s: float = 0.5) -> None:
    """Serve until a signal (uvicorn catches SIGINT / SIGTERM, closes connections within
    ``graceful_s`` and re-raises the signal for ``server/lifecycle.py`` to finish)."""
    import uvicorn

    if host not in LOOPBACK:
        log.warning("serving on %s: anyone who can reach it and knows the token can read memory; "
                    "put it behind TLS", host)
    app = http_app(server, settings, host)
    print(f"trimem: serving MCP over streamable HTTP at {url_of(host, port)}", file=sys.stderr,
          flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning",
                timeout_graceful_shutdown=graceful_s)
