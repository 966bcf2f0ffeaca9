"""Which stored messages a host's ``ref`` names.

A ref is the host's own id for a message, and it is scoped to its session: ``remember`` stores
a message whose ref another session already holds as a message of its own (the same ref in two
sessions is two messages), and skips only a ref that *its* session holds. So a ref alone can name
messages in several sessions. The tools that look messages up by ref read it the same way:

* ``forget(refs=..., session_id=...)`` deletes that session's messages of those refs only;
  without a ``session_id`` a ref must name messages of one session, else the call fails (nothing
  is deleted) and says which sessions hold it: deletion cannot be undone, so it is never guessed.
* a curated memory's ``refs`` cite the messages of the same call, then those of the same session,
  then the one message of that ref elsewhere in the namespace; a ref that names messages of
  several other sessions is refused (a memory must not claim provenance it may not have).

The capture drainer (``capture/drain.py``) treats a ref as taken in the whole namespace on its
own: the refs it writes are the transcript's entry ids, and an entry carried into a resumed
session must not be stored twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .answer import names, quoted
from .errors import ToolFailure

if TYPE_CHECKING:
    from ..storage.rows import Source
    from ..storage.space import Space


def _grouped(space: Space, refs: list[str]) -> dict[str, list[Source]]:
    out: dict[str, list[Source]] = {}
    for row in space.sources.by_refs(sorted(set(refs))):
        if row.ref is not None:   # found by its ref: always
            out.setdefault(row.ref, []).append(row)
    return out


def _one_session(ref: str, rows: list[Source], what: str) -> None:
    sessions = sorted({r.session_id for r in rows})
    if len(sessions) > 1:
        raise ToolFailure(f"ref {quoted(ref)} names messages in {len(sessions)} sessions "
                          f"({names(sessions, 5)}): {what}")


def to_forget(space: Space, refs: list[str], session_id: str | None) -> dict[str, list[Source]]:
    """ref -> the stored messages ``forget`` deletes for it (refs that name nothing are left
    out). With ``session_id``: that session's only. Without: ToolFailure if a ref names messages
    of more than one session."""
    groups = _grouped(space, refs)
    if session_id is not None:
        scoped = {ref: [r for r in rows if r.session_id == session_id]
                  for ref, rows in groups.items()}
        return {ref: rows for ref, rows in scoped.items() if rows}
    for ref, rows in groups.items():
        _one_session(ref, rows, "give session_id to say which session's message to forget")
    return groups


def cited(space: Space, refs: list[str], session_id: str) -> dict[str, str]:
    """ref -> the source id a curated memory of ``session_id`` cites: the session's own message
    of that ref, else the namespace's one message of it (refs that name nothing are left out)."""
    out = {}
    for ref, rows in _grouped(space, refs).items():
        own = [r for r in rows if r.session_id == session_id]
        if not own:
            _one_session(ref, rows, "a curated memory of another session cannot tell which "
                                    "it cites")
        out[ref] = (own or rows)[0].id
    return out
