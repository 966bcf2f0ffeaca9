"""The documents the repository cites exist: markdown links in README.md and docs/, and every
``*.md`` file pyproject.toml names (the design document among them)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
NAMED = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)\b")


def test_markdown_links_resolve():
    broken = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(doc.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (doc.parent / target).exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_the_documents_pyproject_names_exist():
    named = NAMED.findall((ROOT / "pyproject.toml").read_text())
    assert "docs/design.md" in named
    assert [n for n in named if not (ROOT / n).exists()] == []


def test_the_design_document_is_linked_from_the_readme_and_the_contract():
    assert "(docs/design.md)" in (ROOT / "README.md").read_text()
    assert "(design.md)" in (ROOT / "docs" / "contract.md").read_text()
