"""A readable Markdown rendering of namespaces: one folder per namespace with ``sessions.md``
(sessions by date, each message with its speaker, time and ref) and ``wiki/`` (the Memory Wiki
pages, when curation built them). Stored strings are data: every one is escaped so that it cannot
start a heading, a list, a link or HTML, nor end the quote it stands in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from .export import namespace_records

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


def folder_name(namespace: str) -> str:
    from ..storage.db import namespace_key

    return namespace_key(namespace)


def render_sessions(space, progress: Progress | None = None) -> str:
    out = [f"# Namespace {esc(space.namespace)}", ""]
    total, done = space.count_sources(), 0
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


def wiki_pages(space) -> list[dict]:
    from ..strategies.wiki.store import PAGE, ensure

    ensure(space)
    return sorted(space.rows(PAGE, columns=["id", "type", "title", "text"]), key=lambda p: p["id"])


def write_markdown(rt, namespaces: list[str], out: Path, progress: Progress | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for ns in namespaces:
        space = rt.space(ns)
        d = out / folder_name(ns)
        (d / "wiki").mkdir(parents=True, exist_ok=True)
        f = d / "sessions.md"
        f.write_text(render_sessions(space, progress), encoding="utf-8")
        files.append(f)
        for p in wiki_pages(space):
            page = d / "wiki" / (re.sub(r"[^A-Za-z0-9_.-]+", "_", p["id"])[:100] + ".md")
            page.write_text(p["text"] + "\n", encoding="utf-8")
            files.append(page)
    return files
