"""The documentation holds together: relative links and their anchors resolve, a reference to a
document's section names a heading it has, every setting is on the settings page, and nothing
in the repository points readers at a work session or an issue number (the project speaks to
users and maintainers; its history is CHANGELOG.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NAMED = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.md)\b")
# [text](target) and [text](target#anchor) and [text](#anchor); the target has no spaces
LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]*))?\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
# a section cited by name: docs/design.md, "Layout and layers" (line breaks may fall inside)
SECTION_REF = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md)`{0,2},\s+\"([^\"]+)\"")
# A work session by its ordinal, an issue or an issue's item by its number: the project's rule.
HISTORY = re.compile(
    r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|"
    r"thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|"
    r"twenty-[a-z]+|thirtieth) session\b|\b(issues?|items?) #?[0-9]+\b", re.IGNORECASE)
NOT_SCANNED = ("tests/fixtures/", "bench/results/")


def docs() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "bench" / "README.md",
            *sorted((ROOT / "docs").glob("*.md"))]


def prose(text: str) -> str:
    """Markdown without its fenced code blocks (a link or heading there is an example)."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: the text as rendered (no backticks, a link's text only),
    lower case, anything but letters, digits, '_', '-' and spaces dropped, spaces as '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(prose(doc.read_text())):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def headings(doc: Path) -> list[str]:
    return [re.sub(r"\s+", " ", h.replace("`", "")) for h in HEADING.findall(prose(doc.read_text()))]


def tracked_texts() -> list[tuple[str, str]]:
    """(path, text) of every file git tracks, but the fixtures, stored results, symlinks (the
    ``.typing/trimem`` link to the package itself) and files that are not UTF-8 text."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True,
                           text=True).stdout.split("\0")
    out = []
    for name in names:
        path = ROOT / name
        if not name or name.startswith(NOT_SCANNED) or path.is_symlink() or not path.is_file():
            continue
        try:
            out.append((name, path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def joined(text: str) -> str:
    """The text with each line break (and a comment's leading '#') read as one space, so that a
    phrase wrapped across two lines of a docstring or comment is seen whole."""
    return re.sub(r"[ \t]*\n[ \t]*(?:#+[ \t]*)?", " ", text)


def test_markdown_links_and_anchors_resolve():
    broken = []
    for doc in docs():
        for target, anchor in LINK.findall(prose(doc.read_text())):
            if "://" in target or target.startswith("mailto:"):
                continue
            dest = (doc.parent / target) if target else doc
            if not dest.exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{doc.relative_to(ROOT)} -> {target}#{anchor}")
    assert not broken, broken


def test_the_link_check_sees_a_broken_anchor(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# A page\n\n## `What` it is, and why\n\n[x](#what-it-is-and-why) [y](#nope)\n"
                   "```\n[z](#in-a-code-block)\n```\n")
    found = [a for _, a in LINK.findall(prose(doc.read_text()))]
    assert found == ["what-it-is-and-why", "nope"]
    assert anchors(doc) == {"a-page", "what-it-is-and-why"}


def test_sections_cited_by_name_exist():
    """Code and docs cite a section as ``bench/README.md, "Cold start"``: the document must have
    a heading that begins with those words."""
    missing = []
    for name, text in tracked_texts():
        for doc, section in SECTION_REF.findall(joined(text)):
            path = next((p for p in (ROOT / doc, (ROOT / name).parent / doc) if p.is_file()), None)
            if path is None:
                missing.append(f"{name}: {doc} does not exist")
            elif not any(h.startswith(section) for h in headings(path)):
                missing.append(f"{name}: {doc} has no section {section!r}")
    assert not missing, missing


def test_no_work_sessions_or_issue_numbers():
    hits = []
    for name, text in tracked_texts():
        for found in {m.group(0) for t in (text, joined(text)) for m in HISTORY.finditer(t)}:
            hits.append(f"{name}: {found!r}")
    assert not hits, sorted(hits)


def test_the_history_pattern_finds_what_it_is_for():
    ordinal = "nine" + "teenth"
    assert HISTORY.search(f"see bench/README.md, {ordinal} session")
    assert HISTORY.search("Twenty-second" + " Session (2026-12-04)")
    assert HISTORY.search("fixed in " + "issue" + " #14") and HISTORY.search("Issues" + " 15")
    assert HISTORY.search("as " + "item" + " 7 asked") and HISTORY.search("Items" + " #2")
    assert HISTORY.search(joined(f"the {ordinal}\n# session's figures"))
    assert not HISTORY.search("set before the first inference session; the session's rows")


def test_the_settings_page_lists_every_setting():
    from trimem.server.settings import Settings

    fields = {f"TRIMEM_{name.upper()}" for name in Settings.model_fields}
    page = (ROOT / "docs" / "settings.md").read_text()
    listed = set(re.findall(r"TRIMEM_[A-Z0-9_]*[A-Z0-9]", page))
    assert fields - listed == set(), "not on docs/settings.md"
    assert listed - fields - {"TRIMEM_ENV_FILE"} == set(), "on docs/settings.md but not a setting"


def test_the_documents_pyproject_names_exist():
    named = NAMED.findall((ROOT / "pyproject.toml").read_text())
    assert "docs/design.md" in named
    assert [n for n in named if not (ROOT / n).exists()] == []


def test_the_design_document_is_linked_from_the_readme_and_the_contract():
    assert "(docs/design.md)" in (ROOT / "README.md").read_text()
    assert "(design.md)" in (ROOT / "docs" / "contract.md").read_text()
