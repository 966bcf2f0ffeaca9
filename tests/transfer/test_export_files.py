"""What an export writes: private to the user (files 0600, folders 0700), whole or not at all
(the previous file survives an export that stops), Markdown in which no stored string is HTML or
a link, and settings read the way ``serve`` reads them (the home's ``settings.env``)."""

from __future__ import annotations

from typing import Any

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client

from cli_run import write_json
from helpers import payload
from trimem.server.app import build_server
from trimem.server.settings import Settings, load_settings

pytestmark = pytest.mark.anyio
HOSTILE = "<script>alert(1)</script> see [here](http://e.vil) <img src=x onerror=y>"


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def remember(home, messages, ns="work", **settings: Any) -> None:
    opts: dict[str, Any] = {"curation": False, **settings}
    server = build_server(Settings(home=str(home), **opts))
    try:
        async with Client(server) as c:
            payload(await c.call_tool("remember", {"messages": messages, "namespace": ns,
                                                   "session_id": "s1"}))
        if server.runtime.config.curation:
            server.runtime.curation.wait_idle()
    finally:
        server.runtime.close()


async def test_an_export_is_private_and_replaces_the_old_file_whole(trimem, tmp_path):
    await remember(trimem.home, [{"content": "Ana moved to Lisbon.", "ref": "m1"}])
    out = tmp_path / "out" / "all.jsonl"
    out.parent.mkdir(mode=0o755)
    out.write_text("the previous export\n")
    os.chmod(out, 0o644)
    trimem.ok("export", "--quiet", str(out))
    assert mode(out) == 0o600 and "Lisbon" in out.read_text()
    assert sorted(p.name for p in out.parent.iterdir()) == ["all.jsonl"]   # no temp file left
    fresh = tmp_path / "new" / "deeper" / "x.jsonl"
    trimem.ok("export", "--quiet", str(fresh))
    assert mode(fresh) == 0o600 and mode(fresh.parent) == 0o700 and mode(fresh.parent.parent) == 0o700


def test_an_export_that_stops_leaves_the_previous_file(tmp_path):
    from trimem.transfer.files import replacing
    from trimem.transfer.format import Header, SessionRec, write_all

    out = tmp_path / "all.jsonl"
    out.write_text("the previous export\n")

    def records():
        yield SessionRec(type="session", namespace="n", session_id="s")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"), replacing(out) as fh:
        write_all(fh, Header(format="trimem-export", version=2), records())
    assert out.read_text() == "the previous export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["all.jsonl"]


@pytest.mark.slow
async def test_a_killed_export_leaves_the_previous_file(trimem, tmp_path):
    await remember(trimem.home, [{"content": f"message number {k} about topic {k % 17}",
                                  "ref": f"m{k}"} for k in range(1_000)])
    out = tmp_path / "out" / "all.jsonl"
    out.parent.mkdir()
    out.write_text("the previous export\n")
    env = dict(os.environ, TRIMEM_HOME=str(trimem.home), TRIMEM_CURATION="false")
    exe = os.path.join(os.path.dirname(sys.executable), "trimem")
    killed = 0
    for _ in range(5):
        p = subprocess.Popen([exe, "export", "--quiet", str(out)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while p.poll() is None:
            if any(f.name != "all.jsonl" for f in out.parent.iterdir()) or \
                    out.stat().st_size != len("the previous export\n"):
                p.send_signal(signal.SIGKILL)
                killed += 1
                break
            time.sleep(0.0005)
        p.wait()
        if killed:
            break
        out.write_text("the previous export\n")   # it finished first: try again
    assert killed, "the export always finished before it could be killed"
    assert out.read_text() == "the previous export\n"


async def test_markdown_is_private_and_wiki_pages_escape_stored_strings(trimem, tmp_path):
    await remember(trimem.home, [{"content": f"Ana said {HOSTILE} about Lisbon.", "speaker": "Ana",
                                  "ref": "m1"},
                                 {"content": f"Ben: Lisbon {HOSTILE} is sunny.", "speaker": "Ben",
                                  "ref": "m2"}], curation=True, llm="none")
    md = tmp_path / "md"
    rep = trimem.ok("export", "--format", "markdown", "--quiet", str(md))
    pages = [f for f in rep["files"] if "/wiki/" in f]
    assert pages, rep
    texts = {f: open(f).read() for f in rep["files"]}
    assert any("script" in t for f, t in texts.items() if "/wiki/" in f)   # the text is there
    for f, t in texts.items():   # every < and ]( of a stored string is backslash-escaped
        assert not re.search(r"(?<!\\)<", t) and not re.search(r"(?<!\\)\]\(", t), (f, t)
    assert all(mode(Path(f)) == 0o600 for f in texts)
    assert mode(md) == 0o700 and all(mode(d) == 0o700 for d in md.rglob("*") if d.is_dir())


async def test_import_reads_the_homes_settings_file(trimem, tmp_path):
    trimem.home.mkdir()
    (trimem.home / "settings.env").write_text("TRIMEM_MAX_MESSAGE_CHARS=20\n")
    f = write_json(tmp_path / "claude.json", [{"uuid": "u1", "chat_messages": [
        {"uuid": "m1", "sender": "human", "text": "short"},
        {"uuid": "m2", "sender": "assistant", "text": "longer than twenty characters"}]}])
    rep = trimem.ok("import", "--from", "claude", "--quiet", str(f))
    assert rep["messages_stored"] == 1 and rep["messages_refused"] == 1
    assert "the limit is 20" in rep["refused"][0]["reason"]


async def test_export_reads_the_homes_settings_file(trimem, tmp_path, endpoint, monkeypatch):
    srv, url = endpoint
    trimem.home.mkdir()
    (trimem.home / "settings.env").write_text(
        f"TRIMEM_EMBEDDER=openai\nTRIMEM_EMBED_BASE_URL={url}\nTRIMEM_EMBED_MODEL=bow-64\n"
        "TRIMEM_EMBED_API_KEY=k\nTRIMEM_CURATION=false\n")
    monkeypatch.delenv("TRIMEM_CURATION")
    server = build_server(load_settings())
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"messages": [{"content": "Ana moved to Lisbon.",
                                                             "ref": "m1"}]}))
    server.runtime.close()
    before = tables(trimem.home)
    out = tmp_path / "all.jsonl"
    rep = trimem.ok("export", "--quiet", str(out))
    assert rep["records"] == 2 and "Lisbon" in out.read_text()
    # the export used the home's embedder: nothing was re-embedded with another model (which
    # drops the tables of the model the home was configured with)
    assert tables(trimem.home) == before


def tables(home) -> list[str]:
    from trimem.storage import open_store

    store = open_store(str(home))
    try:
        return sorted(n for n in store.table_names() if n.startswith("ns_"))
    finally:
        store.close()


def test_view_reads_the_homes_settings_file(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.env").write_text("TRIMEM_HTTP_TOKEN=from-the-settings-file\n")
    env = dict(os.environ, TRIMEM_HOME=str(home))
    env.pop("TRIMEM_HTTP_TOKEN", None)
    exe = os.path.join(os.path.dirname(sys.executable), "trimem")
    p = subprocess.Popen([exe, "view", "--port", "0"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline() if p.stderr else ""
    finally:
        p.terminate()
        p.wait(timeout=20)
    assert "token=from-the-settings-file" in line, line
