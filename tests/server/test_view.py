"""`trimem view`: the read-only web page. Over real HTTP (uvicorn on 127.0.0.1): the token,
Host and Origin rules of `serve --http`, GET only, every stored string escaped; and in a real
headless Chromium (Debian's package, driven by Playwright): a wiki page with its claim
histories, screenshotted for the CI artifacts."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import httpx2 as httpx
import pytest
from mcp import Client

from helpers import payload
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.server.http import uvicorn_options
from trimem.server.view import view_app

pytestmark = pytest.mark.anyio
TOKEN = "view-test-token-0123456789"
EVIL = '<script>alert(1)</script><img src=x onerror=alert(2)>"\'&amp;'
SESSIONS = [   # Ana moves twice: her residence claim is revised twice (a claim history)
    ("s1", "2023-01-10T10:00:00Z", [("Ana", "I moved to Oslo last month for a new job."),
                                    ("Ana", "Oslo winters are dark but the fjords are great.")]),
    ("s2", "2023-04-02T10:00:00Z", [("Ana", "Big news: I moved to Porto two weeks ago!"),
                                    ("Ben", "The tiles in Porto are lovely.")]),
    ("s3", "2023-09-05T10:00:00Z", [("Ana", "Update: I moved to Quito yesterday."),
                                    ("Ana", "My dog Rex loves the parks in Quito.")]),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
async def served(home, tmp_path_factory):
    settings = Settings(home=str(home), http_token=TOKEN)
    server = build_server(settings)
    async with Client(server) as c:
        for sid, when, turns in SESSIONS:
            payload(await c.call_tool("remember", {
                "session_id": sid, "session_time": when, "namespace": "team",
                "messages": [{"content": t, "speaker": s, "ref": f"{sid}:{k}"}
                             for k, (s, t) in enumerate(turns)]}))
        payload(await c.call_tool("remember", {"namespace": EVIL, "session_id": EVIL, "messages": [
            {"content": EVIL + "\n</pre></td></table><h1>forged</h1>", "speaker": EVIL, "ref": EVIL}]}))
        assert server.runtime.curation.wait_idle(120)
    import uvicorn

    port = free_port()
    rt = server.runtime
    rt.curation.stop(0)
    cfg = uvicorn.Config(view_app(rt, settings, "127.0.0.1"), host="127.0.0.1", port=port,
                         **uvicorn_options())
    uv = uvicorn.Server(cfg)
    th = threading.Thread(target=uv.run, daemon=True)
    th.start()
    while not uv.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", rt
    uv.should_exit = True
    th.join(10)
    rt.close()


async def test_token_host_origin_and_get_only(served):
    base, _ = served
    async with httpx.AsyncClient(base_url=base) as h:
        assert (await h.get("/")).status_code == 401
        assert (await h.get("/?token=wrong")).status_code == 401
        r = await h.get("/?token=" + TOKEN)
        assert r.status_code == 303 and r.headers["location"] == "/"
        assert "httponly" in r.headers["set-cookie"].lower()
        assert "samesite=strict" in r.headers["set-cookie"].lower()
        ok = await h.get("/")                        # the cookie now
        assert ok.status_code == 200 and "team" in ok.text
        assert "script-src" not in ok.headers["content-security-policy"]
        assert "default-src 'none'" in ok.headers["content-security-policy"]
        assert (await h.get("/", headers={"host": "evil.example"})).status_code == 421
        assert (await h.get("/", headers={"origin": "http://evil.example"})).status_code == 403
        assert (await h.post("/ns?name=team")).status_code == 405
        assert (await h.get("/ns?name=nobody")).status_code == 404


async def test_every_stored_string_is_escaped(served):
    base, _ = served
    from urllib.parse import urlencode

    async with httpx.AsyncClient(base_url=base, headers={"authorization": f"Bearer {TOKEN}"}) as h:
        pages = [await h.get("/"), await h.get("/ns?" + urlencode({"name": EVIL})),
                 await h.get("/session?" + urlencode({"ns": EVIL, "id": EVIL})),
                 await h.get("/recall?" + urlencode({"ns": EVIL, "q": EVIL}))]
    for r in pages:
        assert r.status_code == 200, r.text[:300]
        assert "<script>" not in r.text and "<img" not in r.text and "<h1>forged" not in r.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text


async def test_namespace_page_shows_what_the_hooks_captured(served):
    """The capture of a transcript (written by the drainer in ``_capture``) and a hook's own
    failure show on the namespace page, hostile strings escaped."""
    from urllib.parse import urlencode

    from trimem.capture.state import CaptureState

    base, rt = served
    state = CaptureState(rt.config.home)
    state.save_cursor("k1", {"transcript_path": "/x/t.jsonl", "namespace": EVIL,
                             "session_id": EVIL, "offset": 10, "host": "claude-code",
                             "last": {"at": "2026-11-02T10:00:00+00:00", "event": "Stop",
                                      "stored": 7, "skipped": {"thinking": 2},
                                      "redacted": {}, "errors": [], "complete": True},
                             "total": {"stored": 41, "redacted": 3, "captures": 5}})
    state.record_error("Stop", "transcript " + EVIL + " is not a readable file")
    async with httpx.AsyncClient(base_url=base, headers={"authorization": f"Bearer {TOKEN}"}) as h:
        r = await h.get("/ns?" + urlencode({"name": EVIL}))
        other = await h.get("/ns?name=team")
    assert r.status_code == 200
    assert "<h2>Capture</h2>" in r.text and ">41<" in r.text and "thinking 2" in r.text
    assert "Hook failures" in r.text and "not a readable file" in r.text
    assert "<script>" not in r.text and "<img" not in r.text
    assert "Nothing captured by hooks yet" in other.text   # another namespace's capture: not here


@pytest.mark.slow
async def test_wiki_page_with_claim_histories_in_headless_chromium(served):
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")
    pw = pytest.importorskip("playwright.async_api", reason="pip install playwright")
    base, rt = served
    from urllib.parse import urlencode

    from trimem.tools.wiki_pages import page_list

    target = next(p for p in page_list(rt.space("team")) if p["id"] == "wiki-entity-ana")
    out = Path(os.environ.get("TRIMEM_ARTIFACTS") or tempfile.mkdtemp(prefix="trimem-view-"))
    out.mkdir(parents=True, exist_ok=True)
    async with pw.async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run"])
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 900})
            await page.goto(f"{base}/?token={TOKEN}")          # sets the cookie, redirects
            assert page.url == base + "/"
            await page.get_by_role("link", name="team").click()
            assert await page.get_by_role("heading", name="Recall").is_visible()
            await page.goto(f"{base}/page?" + urlencode({"ns": "team", "id": target["id"]}))
            assert await page.get_by_role("heading", name="Claim histories").is_visible()
            assert await page.locator("h3").count() >= 1
            assert await page.locator("table").count() >= 1
            assert await page.locator("span.st-revised").count() >= 2   # Oslo, then Porto
            assert await page.locator("span.st-active", has_text="active").count() >= 1
            shot = out / "view-wiki-page.png"
            await page.screenshot(path=str(shot), full_page=True)
            print(f"\nscreenshot: {shot}")
            await page.goto(f"{base}/recall?" + urlencode({"ns": "team", "q": "Where does Ana live now?",
                                                           "strategy": "wiki"}))
            assert await page.get_by_role("heading", name="Explain trace").is_visible()
            await page.goto(f"{base}/ns?" + urlencode({"name": EVIL}))
            assert await page.evaluate("document.querySelectorAll('script, img').length") == 0
        finally:
            await browser.close()
    assert shot.stat().st_size > 10_000


def test_trimem_view_cuts_off_half_sent_requests(tmp_path):
    """``trimem view`` (the command, as a user starts it) closes a connection whose request is
    not complete within the request guard ``serve --http`` has, and serves others meanwhile."""
    import select
    import subprocess
    import sys

    from trimem.server.http import REQUEST_READ_TIMEOUT_S

    port = free_port()
    env = dict(os.environ, TRIMEM_HOME=str(tmp_path / "home"), TRIMEM_HTTP_TOKEN=TOKEN)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "trimem"), "view", "--port",
                             str(port)], env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        stalled = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(2)]
        stalled[0].sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")   # in its headers
        stalled[1].sendall(b"GET /?tok")                                       # in its first line
        t0 = time.monotonic()
        ok = httpx.get(f"http://127.0.0.1:{port}/", headers={"authorization": f"Bearer {TOKEN}"},
                       timeout=60)
        assert ok.status_code == 200
        open_ = list(stalled)
        while open_ and time.monotonic() - t0 < REQUEST_READ_TIMEOUT_S + 8:
            ready, _, _ = select.select(open_, [], [], 0.5)
            for s in ready:
                try:
                    s.recv(4096)
                except OSError:
                    pass
                open_.remove(s)
        assert not open_, f"{len(open_)} half-sent request(s) still open after " \
                          f"{time.monotonic() - t0:.0f} s"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
