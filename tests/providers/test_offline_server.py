"""The real server over stdio writes nothing outside TRIMEM_HOME and tries no network.

onnxruntime's official Linux builds collect telemetry unless told not to: loading a model wrote
``~/.cache/Microsoft/DeveloperTools/.onnxruntime/{deviceid,onnxruntime.db}`` and ``$TMPDIR/.ses``,
and ~10 s later tried DNS lookups of a telemetry host. ORT stays quiet by itself when it sees a
CI variable, so these tests remove those from the server's environment: they must see what a
user's machine sees.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from helpers import payload, turns

pytestmark = pytest.mark.anyio

# variables that make onnxruntime suppress telemetry on its own (read from its library)
CI_VARS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "CIRCLECI", "BUILDKITE", "TEAMCITY_VERSION",
           "TF_BUILD", "CODEBUILD_BUILD_ID", "BITBUCKET_BUILD_NUMBER", "JENKINS_URL",
           "ORT_RUNNING_UNIT_TESTS", "ORT_DISABLE_TELEMETRY")
XDG = ("XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR")


def empty_user_env(tmp_path: Path, embedder: str = "local") -> tuple[dict[str, str], list[Path]]:
    """The current environment with HOME, TMPDIR and every XDG folder pointed at new empty
    folders, TRIMEM_HOME elsewhere, no CI markers, and ``embedder`` as TRIMEM_EMBEDDER."""
    env = {k: v for k, v in os.environ.items() if k not in CI_VARS and not k.startswith("TRIMEM_")}
    watched = []
    for var in ("HOME", "TMPDIR", *XDG):
        d = tmp_path / var.lower()
        d.mkdir(mode=0o700)
        env[var] = str(d)
        watched.append(d)
    env["TRIMEM_HOME"] = str(tmp_path / "memory")
    env["TRIMEM_CURATION"] = "false"   # only the raw path: curation writes nowhere else either
    env["TRIMEM_EMBEDDER"] = embedder
    return env, watched


def _embedders():
    from trimem.providers.e5_check import unavailable_reason

    why = unavailable_reason()
    return ["local", pytest.param("e5-small", marks=pytest.mark.skipif(
        why is not None, reason=f"e5 cannot run here: {why}"))]


TAGS = {"local": "__all_minilm_l6_v2_int8_384", "e5-small": "__multilingual_e5_small_q4_384"}


def embedded_by(home: Path, embedder: str) -> bool:
    """The store's source vectors are ``embedder``'s (its tables are keyed by the model)."""
    return any("__sources__" in p.name and TAGS[embedder] in p.name for p in home.rglob("*"))


def written(dirs: list[Path]) -> list[str]:
    return sorted(str(p) for d in dirs for p in d.rglob("*"))


async def remember_recall(params: StdioServerParameters, linger_s: float = 0.0) -> None:
    async with Client(params, read_timeout_seconds=120) as c:
        assert {t.name for t in (await c.list_tools()).tools} >= {"remember", "recall"}
        payload(await c.call_tool("remember", {"messages": turns(
            "The blue notebook is in the top drawer.", "Dinner with Marta on Friday."),
            "namespace": "proj"}))
        rec = payload(await c.call_tool("recall", {"query": "where is the notebook?",
                                                   "namespace": "proj", "strategy": "plain"}))
        assert rec["sources"][0]["ref"] == "t1"
        await anyio.sleep(linger_s)


def trimem_command() -> str:
    return str(Path(sys.executable).parent / "trimem")


@pytest.mark.parametrize("embedder", _embedders())
async def test_nothing_written_outside_trimem_home(tmp_path, embedder):
    env, watched = empty_user_env(tmp_path, embedder)
    await remember_recall(StdioServerParameters(command=trimem_command(), args=["serve"], env=env,
                                                cwd=str(tmp_path)))
    assert (tmp_path / "memory").is_dir() and embedded_by(tmp_path / "memory", embedder)
    assert written(watched) == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (apt-get install strace)")
@pytest.mark.parametrize("embedder", _embedders())
async def test_no_network_attempt(tmp_path, embedder):
    """Under strace, for longer than onnxruntime's uploader waits: no socket leaves the host.
    (The e5 embedder does not use onnxruntime: no wait for an uploader there.)"""
    env, watched = empty_user_env(tmp_path, embedder)
    log = tmp_path / "strace.txt"
    await remember_recall(StdioServerParameters(
        command="strace", args=["-f", "-qq", "-e", "trace=connect,sendto,sendmsg", "-o", str(log),
                                trimem_command(), "serve"], env=env, cwd=str(tmp_path)),
        linger_s=15.0 if embedder == "local" else 2.0)
    assert log.is_file()  # strace ran
    calls = log.read_text()
    inet = [ln for ln in calls.splitlines() if re.search(r"AF_INET6?\b|htons\(53\)", ln)]
    assert inet == [], inet[:5]
    assert written(watched) == [] and embedded_by(tmp_path / "memory", embedder)
