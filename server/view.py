"""``trimem view``: a local, read-only web page to browse memory.

Namespaces, sessions with their messages, the Memory Wiki pages with every linked trajectory's
claim history, and a recall with its explain trace. It answers GET only and never curates (the
runtime's background curation is stopped: queued sessions stay queued for ``trimem serve``);
the recall form logs its recall like the ``recall`` tool does, so ``explain`` can replay it.

Security is that of ``serve --http`` (server/http.py, reused): the same bearer token
(``BearerAuth``), the same exact Host / Origin rules (``HostCheck``) and the same request guard
(``run_uvicorn``: a request not complete within ``REQUEST_READ_TIMEOUT_S`` is cut off). A
browser cannot send a bearer header on navigation, so the URL printed at start carries
``?token=``: the first request with a right token sets an HttpOnly, SameSite=Strict cookie and
redirects to the same page without it; later requests present the cookie, which is turned into
the bearer header before ``BearerAuth`` checks it. Every page is sent with a CSP that allows no script at all.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlencode
from http.cookies import SimpleCookie

from . import view_html as V
from ..capture.status import capture_status
from ..tools.errors import ToolFailure
from .settings import load_settings
from .view_data import sessions

if TYPE_CHECKING:
    from ..tools.runtime import Runtime

COOKIE = "trimem_view"
HEADERS = {"content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; "
           "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
           "x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
           "cache-control": "no-store", "x-frame-options": "DENY"}


def _html(body: str, status: int = 200):
    from starlette.responses import HTMLResponse  # lazy: starlette, not in a hook

    return HTMLResponse(body, status_code=status, headers=HEADERS)


def routes(rt: Runtime):
    """The Starlette app of the pages (no auth here: see :func:`view_app`)."""
    from starlette.applications import Starlette  # lazy: starlette, not in a hook
    from starlette.responses import RedirectResponse  # lazy: starlette, not in a hook
    from starlette.routing import Route  # lazy: starlette, not in a hook

    from ..tools import namespaces as nsmod  # lazy: the tools layer, not in a hook

    def guarded(fn):
        def endpoint(request):
            q = request.query_params
            if "token" in q:   # BearerAuth already accepted it: keep it in a cookie, drop it
                rest = urlencode([(k, v) for k, v in q.multi_items() if k != "token"])
                resp = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), 303)
                resp.set_cookie(COOKIE, q["token"], httponly=True, samesite="strict", path="/")
                return resp
            try:
                return _html(fn(q))
            except ToolFailure as exc:
                return _html(V.error(404, str(exc)), 404)
        return endpoint

    def space_of(q):
        ns = nsmod.require(rt, q.get("ns") or q.get("name") or "")
        return ns, rt.space(ns)

    def home(q):
        return V.namespaces(nsmod.listing(rt)["namespaces"])

    def namespace(q):
        from ..tools.wiki_pages import page_list  # lazy: the tools layer, not in a hook

        ns, space = space_of(q)
        return V.namespace(ns, sessions(space), page_list(space),
                           capture_status(rt.config.home, ns))

    def session(q):
        ns, space = space_of(q)
        sid = q.get("id") or ""
        msgs = space.sources.by_session(sid)
        if not msgs:
            raise ToolFailure(f"no session {sid!r} in namespace {ns!r}")
        return V.session(ns, sid, space.sessions.get(sid), msgs)

    def wiki(q):
        from ..tools.wiki_pages import page_with_claims  # lazy: the tools layer, not in a hook

        ns, space = space_of(q)
        p, trajs, claims = page_with_claims(space, q.get("id") or "")
        if p is None:
            raise ToolFailure(f"no wiki page {q.get('id')!r} in namespace {ns!r}")
        return V.wiki_page(ns, p, trajs, claims)

    def recall(q):
        from ..tools.explain import explain  # lazy: the tools layer, not in a hook
        from ..tools.recall import recall as run  # lazy: the tools layer, not in a hook

        ns, _ = space_of(q)
        strategy = q.get("strategy") if q.get("strategy") in V.STRATEGIES else "auto"
        text = q.get("q") or ""
        out = run(rt, text, strategy, ns, 2000)
        return V.recall(ns, text, out, explain(rt, out.recall_id, ns).record)

    def not_found(request, exc):
        return _html(V.error(404, "no such page"), 404)

    pages = {"/": home, "/ns": namespace, "/session": session, "/page": wiki, "/recall": recall}
    return Starlette(routes=[Route(p, guarded(f), methods=["GET", "HEAD"]) for p, f in pages.items()],
                     exception_handlers={404: not_found})


class CookieToBearer:
    """ASGI: a request without an Authorization header presents its ``?token=`` or its view
    cookie as the bearer token, for ``BearerAuth`` to check (it alone compares tokens)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = list(scope.get("headers") or [])
            if not any(k == b"authorization" for k, _ in headers):
                token = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [""])[0]
                if not token:
                    jar = SimpleCookie()
                    for k, v in headers:
                        if k == b"cookie":
                            try:
                                jar.load(v.decode("latin-1"))
                            except Exception:   # a malformed cookie header: no token
                                pass
                    token = jar[COOKIE].value if COOKIE in jar else ""
                if token:
                    headers.append((b"authorization", f"Bearer {token}".encode("latin-1")))
                    scope = dict(scope, headers=headers)
        await self.app(scope, receive, send)


def view_app(rt, settings, host: str):
    from .http import (  # lazy: uvicorn, MCP SDK (server.http), not in a hook
        BearerAuth, HostCheck, allowed_names, load_or_create_token)

    auth = BearerAuth(routes(rt), load_or_create_token(settings))
    return HostCheck(CookieToBearer(auth), allowed_names(settings, host))


def cmd_view(args) -> int:
    from ..tools.runtime import Runtime  # lazy: the tools layer, not in a hook
    from .cli import _logging  # lazy: cycle with server.cli
    from .http import load_or_create_token, run_uvicorn  # lazy: uvicorn, MCP SDK (server.http), not in a hook

    settings = load_settings(args.env_file)   # settings.env in the home, as `serve` reads it
    _logging(settings.log_level)
    rt = Runtime(settings.to_config())
    rt.curation.stop(0)     # read-only: nothing is curated by the viewer
    app = view_app(rt, settings, args.host)
    start = "/ns?" + urlencode({"name": args.namespace}) + "&" if args.namespace else "/?"
    url = f"http://{args.host}:{args.port}{start}token={load_or_create_token(settings)}"
    print(f"trimem: read-only view at {url}", file=sys.stderr, flush=True)
    try:
        run_uvicorn(app, args.host, args.port)
    finally:
        rt.close()
    return 0


def add_parser(sub, common) -> dict:
    v = sub.add_parser("view", parents=[common], help="browse memory in a local, read-only web "
                       "page (the URL, with its token, is printed to stderr)")
    v.add_argument("--namespace", help="open this namespace's page")
    v.add_argument("--host", default="127.0.0.1")
    v.add_argument("--port", type=int, default=8766)
    return {"view": cmd_view}
