"""The ``SessionStart`` context: a budgeted memory of the project, built ahead of time.

A hook must answer within a second and importing LanceDB alone takes about two on this
machine, so the context is not built when the host asks for it: the drainer (the process that
stores what hooks captured, ``capture/drain.py``) builds it after each capture settles and
writes it to ``<capture>/digest/<namespace key>.json``; ``SessionStart`` reads that file.

Forgets: the file records the namespace's forget stamp (``storage/names.py``) read *before*
building. A forget in any process deletes its rows and then writes a new stamp, so a digest
that may hold forgotten text never matches the stamp and is not shown (the next drainer
builds it again).

What it holds, in this order, inside the memory frame (every stored string goes through
``strategies/frame.py``), until ``budget_tokens`` (characters / 4, as recall counts) is spent:

1. one line: the namespace, how many sessions and messages it holds, the latest session's
   date, and how to ask for more (``recall(query, namespace=...)``);
2. the latest sessions, newest first (at most ``RECENT``): their date and size, the user's first
   request in it and the last one (each cut to ``ASK_CHARS``): what was being worked on;
3. long-running threads: the wiki's trajectories that span the most sessions (at least two),
   by their title and their latest session's date: what keeps coming back;
4. the sessions before those (at most ``EARLIER``), newest first, by their date and the user's
   opening request: an index of what else the memory holds.

Chosen to be cheap to build and stable: it needs no query, no embedding and no model, and
it says what a new session most often needs (what was going on last, what recurs).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Iterator

from ..storage.names import namespace_key, read_forget_stamp
from ..strategies import frame
from .state import CaptureState, read_json, write_json

if TYPE_CHECKING:
    from ..storage.rows import Session
    from ..storage.space import Space
    from ..tools.runtime import Runtime

log = logging.getLogger(__name__)
RECENT = 5
EARLIER = 30    # older sessions listed by their opening request, while the budget lasts
THREADS = 6
ASK_CHARS = 200


def _day(t) -> str:
    return t.strftime("%Y-%m-%d") if isinstance(t, datetime) else "undated"


def _asks(space: Space, session_id: str) -> list[str]:
    rows = [r for r in space.sources.by_session(session_id) if r.speaker == "user"]
    rows.sort(key=lambda r: r.seq or 0)
    texts = [str(r.text or "").strip() for r in rows]
    texts = [t for t in texts if t]
    picked = texts[:1] + ([texts[-1]] if len(texts) > 1 else [])
    return [t if len(t) <= ASK_CHARS else t[:ASK_CHARS].rstrip() + " …" for t in picked]


def _threads(space: Space) -> list[str]:
    from ..tools.wiki_pages import recurring_threads  # lazy: the tools layer, not in a hook process

    return [f"- {frame.one_line(frame.neutralise(r.get('title') or ''))[:160]} "
            f"({len(r['sessions'])} sessions, last {_day(r.get('last_time'))})"
            for r in recurring_threads(space, 2, THREADS) if r.get("title")]


def build(rt: Runtime, namespace: str, budget_tokens: int) -> str:
    """The context for ``namespace`` ("" when it holds nothing)."""
    space = rt.space(namespace)
    sessions = [s for s in space.sessions.all() if s.namespace == namespace]
    if not sessions:
        return ""
    sessions.sort(key=lambda s: s.last_ts or s.session_time or datetime.min,
                  reverse=True)
    n_msgs = sum(s.n_messages for s in sessions)
    ns = frame.one_line(frame.neutralise(namespace))
    head = (f"[trimem · memory of this project, namespace \"{ns}\" · {len(sessions)} sessions, "
            f"{n_msgs} messages, latest {_day(sessions[0].last_ts)} · more: "
            f"recall(query, namespace=\"{ns}\")]\n")
    budget = budget_tokens * 4 - len(head) - len(frame.OPEN) - len(frame.CLOSE) - 2
    lines: list[str] = []
    full = False

    def section(title: str, groups: Iterator[tuple[str, ...]]) -> None:
        """The title and each group of lines whole, while they fit; once one does not, nothing
        more is added (no title without its first group, no later section)."""
        nonlocal budget, full
        first = True
        for group in groups:
            group = (title, *group) if first else group
            size = sum(len(x) + 1 for x in group)
            if full or size > budget:
                full = True
                return
            lines.extend(group)
            budget -= size
            first = False

    def day(s: Session) -> str:
        return _day(s.last_ts or s.session_time)

    section("Latest sessions:", (
        (f"[{day(s)} · {s.n_messages} messages]",
         *(f"user: {frame.shown(a)[0]}" for a in _asks(space, s.session_id)))
        for s in sessions[:RECENT]))
    section("Threads that keep coming back:", ((t,) for t in _threads(space)))
    section("Earlier sessions:", (
        (f"[{day(s)}] user: {frame.shown(asks[0])[0]}",)
        for s in sessions[RECENT:RECENT + EARLIER]
        for asks in [_asks(space, s.session_id)[:1]] if asks))
    return head + frame.OPEN + "\n".join(lines) + "\n" + frame.CLOSE


def refresh(rt: Runtime, state: CaptureState, namespace: str, budget_tokens: int) -> None:
    """Build the namespace's context and write it with the forget stamp read before."""
    key = namespace_key(namespace)
    stamp = read_forget_stamp(state.home, key)
    text = build(rt, namespace, budget_tokens)
    write_json(state.root / "digest" / f"{key}.json",
               {"namespace": namespace, "stamp": stamp, "text": text,
                "budget_tokens": budget_tokens, "built_at": datetime.now().astimezone().isoformat()})


def stale(state: CaptureState, namespace: str) -> bool:
    got = read_json(state.root / "digest" / f"{namespace_key(namespace)}.json")
    return not isinstance(got, dict) or got.get("stamp") != read_forget_stamp(
        state.home, namespace_key(namespace))


def read(state: CaptureState, namespace: str) -> str | None:
    """The context to show, or None when there is none or it may hold forgotten text."""
    key = namespace_key(namespace)
    got = read_json(state.root / "digest" / f"{key}.json")
    if not isinstance(got, dict) or got.get("namespace") != namespace:
        return None
    if got.get("stamp") != read_forget_stamp(state.home, key):
        return None
    text = got.get("text")
    return text if isinstance(text, str) and text else None
