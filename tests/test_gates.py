"""The gates CI keeps: ``ruff check`` and ``basedpyright`` (pyright, basic mode) report nothing,
on the package and its tests; and pytest runs with a per-test timeout and strict markers.

Both tools read their settings from pyproject.toml and come with the ``test`` extra. A failure prints
the tools' own report; fix the code (or, where a library's stubs are wrong, narrow with
``typing.cast`` or an ``isinstance`` check) rather than loosening the configuration.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(module: str, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.fail(f"{module} is not installed: pip install -e '.[test]'")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_ruff_reports_nothing():
    out = _run("ruff", "check", "--no-cache", "--output-format", "concise", ".", timeout=300)
    assert out.returncode == 0, f"ruff check found errors:\n{out.stdout}{out.stderr}"


@pytest.mark.slow
@pytest.mark.timeout(1300)   # the package and the tests: ~3 min on a loaded 2-core machine
def test_pyright_reports_no_errors():
    out = _run("basedpyright", "--project", str(ROOT), "--pythonpath", sys.executable,
               timeout=1200)
    assert out.returncode == 0, f"basedpyright found errors:\n{out.stdout}{out.stderr}"
    assert "0 errors" in out.stdout, out.stdout


def test_pytest_runs_with_a_timeout_and_strict_markers(request):
    """A hung test fails (pytest-timeout, pyproject's ``timeout``) instead of stalling the suite,
    and a misspelt marker is an error, not a test silently left unmarked."""
    assert float(request.config.getini("timeout")) > 0
    assert request.config.option.strict_markers
