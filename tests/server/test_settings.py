"""Where settings come from: the environment and one file in TRIMEM_HOME (or named), never the
working directory's ``.env`` (a host may start the server in any project folder)."""

from __future__ import annotations

import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from helpers import error_text, payload, turns

pytestmark = pytest.mark.anyio


class Listener:
    """A local HTTP endpoint that records every request (where a hostile .env points)."""

    def __init__(self):
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                hits.append(self.path)
                self.rfile.read(int(self.headers.get("content-length") or 0))
                self.send_response(500)
                self.end_headers()

            do_GET = do_POST

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def serve(home: Path, cwd: Path, **extra) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIMEM_")}
    env.update(TRIMEM_HOME=str(home), **extra)
    return StdioServerParameters(command=str(Path(sys.executable).parent / "trimem"),
                                 args=["serve"], env=env, cwd=str(cwd))


async def test_a_dotenv_in_the_working_directory_changes_nothing(tmp_path):
    listener = Listener()
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(
        f"TRIMEM_EMBEDDER=openai\nTRIMEM_EMBED_BASE_URL={listener.url}\nTRIMEM_EMBED_API_KEY=k\n"
        f"TRIMEM_EMBED_MODEL=m\nTRIMEM_CURATION=false\n")
    home = tmp_path / "home"
    try:
        async with Client(serve(home, project), read_timeout_seconds=120) as c:
            payload(await c.call_tool("remember", {"messages": turns("The key is under the mat.",
                                                                      "Lunch at noon.")}))
            rec = payload(await c.call_tool("recall", {"query": "where is the key?"}))
            assert rec["sources"][0]["ref"] == "t1"
    finally:
        listener.close()
    assert listener.hits == [], "remembered text was sent where the project's .env pointed"
    assert home.exists()


async def test_the_homes_settings_file_is_read(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.env").write_text("TRIMEM_MAX_MESSAGES=1\n")
    async with Client(serve(home, tmp_path), read_timeout_seconds=120) as c:
        msg = error_text(await c.call_tool("remember", {"messages": turns("one", "two")}))
    assert "the limit is 1" in msg


def test_load_settings_sources_and_precedence(tmp_path, monkeypatch):
    from trimem.server.settings import load_settings

    for k in list(os.environ):
        if k.startswith("TRIMEM_"):
            monkeypatch.delenv(k)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("TRIMEM_MAX_MESSAGES=7\n")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TRIMEM_HOME", str(home))
    assert load_settings().max_messages == 1000                 # the cwd's .env: ignored
    (home / "settings.env").write_text("TRIMEM_MAX_MESSAGES=5\nTRIMEM_HOME=/somewhere/else\n")
    s = load_settings()
    assert s.max_messages == 5 and s.home == str(home)          # the home's file cannot move it
    named = tmp_path / "named.env"
    named.write_text("TRIMEM_MAX_MESSAGES=3\n")
    assert load_settings(named).max_messages == 3               # --env-file
    monkeypatch.setenv("TRIMEM_ENV_FILE", str(named))
    assert load_settings().max_messages == 3                    # TRIMEM_ENV_FILE
    monkeypatch.setenv("TRIMEM_MAX_MESSAGES", "2")
    assert load_settings().max_messages == 2                    # the environment wins
    with pytest.raises(ValueError, match="does not exist"):
        load_settings(tmp_path / "missing.env")


@pytest.mark.parametrize("env, says", [
    ({"TRIMEM_HOOK_START_TOKENS": "abc"}, "TRIMEM_HOOK_START_TOKENS: Input should be a valid integer"),
    ({"TRIMEM_LOCK_WAIT_S": "5"}, "TRIMEM_LOCK_WAIT_S (5) must exceed TRIMEM_LOCK_LEASE_S"),
])
def test_a_bad_setting_is_one_clear_line_not_a_traceback(tmp_path, env, says):
    import subprocess

    for cmd in (["namespaces"], ["status"], ["export", str(tmp_path / "out.jsonl")]):
        out = subprocess.run([sys.executable, "-m", "trimem.server.cli", *cmd], text=True,
                             capture_output=True, timeout=60,
                             env=os.environ | {"TRIMEM_HOME": str(tmp_path / "home")} | env)
        assert out.returncode in (1, 2), out.stderr   # the command's own failure status
        assert "Traceback" not in out.stderr and says in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1 and "nothing was done" in out.stderr
    assert not (tmp_path / "home").exists() and not (tmp_path / "out.jsonl").exists()
