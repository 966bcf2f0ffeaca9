"""The ``trimem`` fixture of the transfer tests (tests/cli_run.py)."""

from __future__ import annotations

import pytest

from cli_run import Trimem


@pytest.fixture
def trimem(tmp_path, monkeypatch, capsys) -> Trimem:
    """``trimem(*argv)`` -> Ran, with TRIMEM_HOME a fresh folder (curation off)."""
    home = tmp_path / "home"
    monkeypatch.setenv("TRIMEM_HOME", str(home))
    monkeypatch.setenv("TRIMEM_CURATION", "false")
    return Trimem(home, capsys)
