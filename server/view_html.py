"""The HTML of ``trimem view``. Every stored string is hostile: each one goes through
:func:`h` (``html.escape``, quotes included) and every link is built with ``urlencode``, so
no message, speaker, title or namespace can add markup, a script or an attribute."""

from __future__ import annotations

import json
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import urlencode

if TYPE_CHECKING:
    from ..storage.rows import Session, Source

STYLE = """body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;
color:#1d2430}a{color:#0b5cad}table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}
td,th{border-bottom:1px solid #dde2ea;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f3f5f8}.t{white-space:pre-wrap;word-break:break-word}.muted{color:#6b7685}
.st-active{color:#11733a}.st-revised,.st-deprecated,.st-superseded{color:#9a4a00}
nav{margin-bottom:1em}pre{background:#f6f8fa;padding:.7em;overflow:auto;white-space:pre-wrap}
form input[type=text]{width:28em}h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}"""


def h(value) -> str:
    return escape("" if value is None else str(value), quote=True)


def link(path: str, text, **params) -> str:
    return f'<a href="{h(path + "?" + urlencode(params))}">{h(text)}</a>'


def when(t) -> str:
    return t.strftime("%Y-%m-%d %H:%M") if hasattr(t, "strftime") else h(t or "")


def page(title: str, body: str, ns: str | None = None) -> str:
    crumbs = link("/", "namespaces", ) if ns is None else (
        link("/", "namespaces") + " › " + link("/ns", ns, name=ns))
    return (f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{h(title)} · trimem"
            f"</title><style>{STYLE}</style></head><body><nav>{crumbs}</nav>"
            f"<h1>{h(title)}</h1>{body}</body></html>")


def table(head: list[str], rows: list[list[str]]) -> str:
    """``rows`` cells are HTML already (built with :func:`h` / :func:`link`)."""
    th = "".join(f"<th>{h(c)}</th>" for c in head)
    trs = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def namespaces(listing: list[dict]) -> str:
    rows = [[link("/ns", n["namespace"], name=n["namespace"]), h(n["sources"]), h(n["sessions"])]
            for n in listing]
    return page("Memory", table(["namespace", "messages", "sessions"], rows)
                if rows else "<p class=muted>No namespace yet: remember creates one.</p>")


STRATEGIES = ("auto", "plain", "hybrid", "workspace", "wiki")


def capture(cap: dict) -> str:
    """What the host's hooks captured into this namespace (``capture/status.py``): the last
    capture of each transcript, with what it stored, skipped, redacted and any errors."""
    rows = []
    for r in cap.get("last") or []:
        last, total = r.get("last") or {}, r.get("total") or {}
        skipped = ", ".join(f"{k} {v}" for k, v in (last.get("skipped") or {}).items())
        errors = "; ".join(str(e) for e in last.get("errors") or [])
        rows.append([when(last.get("at")), h(r.get("session_id")), h(last.get("event")),
                     h(last.get("stored")), h(total.get("stored")), h(skipped or "-"),
                     h(total.get("redacted") or 0), h(errors or "none")])
    head = (f"<p class=muted>{h(cap.get('transcripts', 0))} transcripts · "
            f"{h(cap.get('pending_events', 0))} events waiting · drainer "
            f"{'running' if cap.get('drainer_running') else 'idle'}</p>")
    errs = [[when(e.get("at")), h(e.get("event")), h(e.get("error"))]
            for e in cap.get("hook_errors") or []]
    return (head + (table(["last capture", "session", "event", "stored", "stored in all",
                           "skipped", "redacted", "errors"], rows) if rows else
                    "<p class=muted>Nothing captured by hooks yet.</p>")
            + (("<h3>Hook failures (any project)</h3>" + table(["time", "event", "error"], errs)) if errs
               else ""))


def namespace(ns: str, sessions: list[Session], pages: list[dict], cap: dict | None = None) -> str:
    opts = "".join(f"<option>{s}</option>" for s in STRATEGIES)
    form = (f'<form method=get action="/recall"><input type=hidden name=ns value="{h(ns)}">'
            f'<input type=text name=q placeholder="ask the memory…" aria-label=query> '
            f'<select name=strategy aria-label=strategy>{opts}</select> '
            f'<button type=submit>recall</button></form>')
    srows = [[when(s.session_time), link("/session", s.session_id, ns=ns, id=s.session_id),
              h(s.n_messages), h(s.curation)] for s in sessions]
    prows = [[h(p["type"]), link("/page", p["title"] or p["id"], ns=ns, id=p["id"]),
              h(len(p.get("trajectory_ids") or []))] for p in pages]
    body = (f"<h2>Recall</h2>{form}<h2>Sessions ({len(sessions)})</h2>"
            + table(["date", "session", "messages", "curation"], srows)
            + f"<h2>Wiki pages ({len(pages)})</h2>"
            + (table(["type", "page", "trajectories"], prows) if prows else
               "<p class=muted>No wiki pages yet (curation builds them).</p>")
            + ("<h2>Capture</h2>" + capture(cap) if cap is not None else ""))
    return page(f"Namespace {ns}", body, ns)


def session(ns: str, sid: str, meta: Session | None, messages: list[Source]) -> str:
    rows = [[h(m.seq), when(m.timestamp), h(m.speaker), h(m.ref),
             f'<div class=t>{h(m.text)}</div>'] for m in messages]
    head = f"<p class=muted>{when(meta.session_time if meta else None)}</p>"
    return page(f"Session {sid}", head + table(["#", "time", "speaker", "ref", "message"], rows), ns)


def wiki_page(ns: str, p: dict, trajectories: list[dict], claims: dict[str, list[dict]]) -> str:
    parts = [f"<p class=muted>{h(p['type'])} page · {h(p['id'])}</p>",
             f"<pre class=t>{h(p['text'])}</pre>", "<h2>Claim histories</h2>"]
    for t in trajectories:
        cs = sorted(claims.get(t["id"], []), key=lambda c: c["position"])
        rows = [[h(c["position"]), h(c["timestamp"]), h(c["speaker"]),
                 f'<div class=t>{h(c["text"])}</div>', h(c["op"]),
                 f'<span class="st-{h(c["status"])}">{h(c["status"])}</span>',
                 h(c.get("by") or c.get("target") or ""), h(c["ref"])] for c in cs]
        parts.append(f"<h3>{h(t.get('title') or t['id'])} <span class=muted>"
                     f"({len(cs)} claims)</span></h3>"
                     + table(["#", "time", "speaker", "claim", "op", "status", "by / target",
                              "ref"], rows))
    return page(p.get("title") or p["id"], "".join(parts), ns)


def recall(ns: str, q: str, out, trace: dict | None) -> str:
    rows = [[h(i.kind), h(f"{i.score:.3f}" if i.score is not None else ""), h(i.role or ""),
             f'<div class=t>{h(i.text)}</div>'] for i in out.items]
    body = (f"<p><b>{h(out.strategy)}</b> · {h(out.tokens)} tokens · abstain: {h(out.abstain)}"
            f"<br><span class=muted>{h(out.route_reason)}</span></p>"
            f"<h2>Items ({len(out.items)})</h2>" + table(["kind", "score", "role", "text"], rows)
            + f"<h2>Context</h2><pre class=t>{h(out.context)}</pre><h2>Explain trace</h2>"
            f"<details open><summary>{h(out.recall_id)}</summary><pre>"
            f"{h(json.dumps(trace, indent=1, ensure_ascii=False, default=str))}</pre></details>")
    return page(f"Recall: {q}", body, ns)


def error(status: int, message: str) -> str:
    return page(f"{status}", f"<p>{h(message)}</p>")
