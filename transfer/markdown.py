"""A readable Markdown rendering of namespaces: one folder per namespace with ``sessions.md``
(sessions by date, each message with its speaker, time and ref) and ``wiki/`` (the Memory Wiki
pages, when curation built them). Stored strings are data: every one is escaped so that it cannot
start a heading, a list, a link or HTML, nor end the quote it stands in. Folders are 0700 and
files 0600, each written beside and renamed into place (``transfer/files.py``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..tools.wiki_pages import page_list
from .export import namespace_records
from .files import private_dir, write_private
from ..storage.db import namespace_key

if TYPE_CHECKING:
    from ..storage.space import Space

Progress = Callable[[int, int, str], None]
_SPECIAL = re.compile(r"([\\`*_\[\]<>#|~!{}()])")
_LEAD = re.compile(r"^(\s*)([-+=]|\d+[.)])", re.M)


def esc(text: str | None) -> str:
    """Inline Markdown for an untrusted string: punctuation that builds structure is
    backslash-escaped (CommonMark), line breaks become spaces."""
    s = _SPECIAL.sub(r"\\\1", " ".join(str(text or "").split()))
    return _LEAD.sub(lambda m: m.group(1) + "\\" + m.group(2), s)


def quote(text: str) -> str:
    """A block of untrusted text as a Markdown quote, every line escaped and prefixed."""
    lines = str(text).splitlines() or [""]
    return "\n".join("> " + _LEAD.sub(lambda m: m.group(1) + "\\" + m.group(2),
                                      _SPECIAL.sub(r"\\\1", ln)) for ln in lines)


_MARK = re.compile(r"^(#{1,6} |- )?(.*)$")


def page_markdown(text: str) -> str:
    """A wiki page's text for a Markdown file: the page's own structure (its headings and list
    items, which start every line it builds) is kept; everything else on a line derives from
    stored strings and is escaped like :func:`esc`."""
    out = []
    for line in str(text).splitlines():
        m = _MARK.match(line)
        mark, rest = (m.group(1) or "", m.group(2)) if m else ("", line)
        out.append(mark + esc(rest))
    return "\n".join(out)


def folder_name(namespace: str) -> str:
    return namespace_key(namespace)


def render_sessions(space: Space, progress: Progress | None = None) -> str:
    out = [f"# Namespace {esc(space.namespace)}", ""]
    total, done = space.sources.count(), 0
    for rec in namespace_records(space):
        if rec.type == "session":
            when = rec.session_time.strftime("%Y-%m-%d %H:%M") if rec.session_time else "undated"
            out += ["", f"## {when} · session {esc(rec.session_id)}", ""]
        elif rec.type == "message":
            done += 1
            bits = [f"**{esc(rec.speaker or 'unknown')}**"]
            if rec.timestamp:
                bits.append(rec.timestamp.strftime("%Y-%m-%d %H:%M"))
            if rec.ref:
                bits.append(f"ref `{esc(rec.ref)}`")
            out += [" · ".join(bits), "", quote(rec.content), ""]
            if progress and (done % 200 == 0 or done == total):
                progress(done, total, space.namespace)
        elif rec.type == "curated":
            what = (f"{esc(rec.subject)} — {esc(rec.relation)} — {esc(rec.object)}"
                    if rec.kind == "fact" else f"{esc(rec.title)}: {esc(rec.summary)}")
            out += [f"- curated {rec.kind}: {what} (refs: {esc(', '.join(rec.refs))})", ""]
        elif rec.type == "forget":
            out += [f"- forgotten: {len(rec.ids)} item(s)"
                    + (f" at {rec.at:%Y-%m-%d %H:%M}" if rec.at else ""), ""]
    return "\n".join(out) + "\n"


def write_markdown(rt, namespaces: list[str], out: Path, progress: Progress | None = None) -> list[Path]:
    private_dir(out)
    files = []
    for ns in namespaces:
        space = rt.space(ns)
        d = private_dir(out / folder_name(ns) / "wiki").parent
        files.append(write_private(d / "sessions.md", render_sessions(space, progress)))
        for p in sorted(page_list(space, with_text=True), key=lambda p: p["id"]):
            page = d / "wiki" / (re.sub(r"[^A-Za-z0-9_.-]+", "_", p["id"])[:100] + ".md")
            files.append(write_private(page, page_markdown(p["text"]) + "\n"))
    return files
