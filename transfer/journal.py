"""Each session an import writes is first recorded as an *intent*, so that a process killed in the
middle of it leaves nothing half-imported once the next import or export has started.
``remember`` writes a session in three commits: the curated memories, the session row, then the
messages (the acknowledgement point, one commit). An intent is a small file in
``<home>/_imports/`` (0600, written and synced before the first commit, removed after the last)
naming the namespace, the session, the session row as it was, and the ids of the messages and
curated memories about to be written; its writer holds a lock on ``<intent>.lock`` while it
lives (``filelock``: ``flock`` on POSIX, ``msvcrt`` locking on Windows). An intent found
unlocked belongs to a process that died: if its messages were committed the write was complete
(nothing to do), else the curated memories it wrote are deleted and the session row is put back
as it was. Homes in object storage (``s3://``) have no intents: a write there is whole per
commit only.
"""

from __future__ import annotations

import json
import os
import uuid
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from filelock import FileLock, Timeout

from ..storage.rows import Session

if TYPE_CHECKING:
    from ..storage.space import Space

FOLDER = "_imports"


def _encode(session: Session | None) -> dict | None:
    if session is None:
        return None
    return {k: {"$t": v.isoformat()} if isinstance(v, datetime) else v
            for k, v in session.as_dict().items()}


def _decode(row: dict) -> Session:
    return Session.of({k: datetime.fromisoformat(v["$t"]) if isinstance(v, dict) and "$t" in v
                       else v for k, v in row.items()})


class Journal:
    def __init__(self, folder: Path | None):
        self.folder = folder

    @classmethod
    def of(cls, rt) -> Journal:
        home = str(rt.config.home)
        return cls(None if "://" in home else Path(home).expanduser() / FOLDER)

    @contextmanager
    def intent(self, space: Space, session_id: str, source_ids: list[str],
               memory_ids: list[str]) -> Iterator[None]:
        """Around one session's ``remember``: recorded before, removed after; if the write
        fails here, what it wrote is undone at once."""
        if self.folder is None:
            yield
            return
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.folder / f"{os.getpid()}-{uuid.uuid4().hex}.json"
        intent = {"namespace": space.namespace, "session_id": session_id,
                  "session": _encode(space.sessions.get(session_id)),
                  "source_ids": source_ids, "memory_ids": memory_ids}
        with FileLock(_lock_of(path)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as fh:
                json.dump(intent, fh)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                yield
            except BaseException:
                _settle(space, intent)
                raise
            finally:
                path.unlink(missing_ok=True)
        _lock_of(path).unlink(missing_ok=True)

    def recover(self, rt) -> list[str]:
        """Settle the intents of processes that died; one note per intent settled."""
        if self.folder is None or not self.folder.is_dir():
            return []
        notes = []
        for path in sorted(self.folder.glob("*.json")):
            lock = FileLock(_lock_of(path), timeout=0)
            try:
                lock.acquire()
            except Timeout:
                continue                    # its writer is alive
            try:
                try:
                    intent = json.loads(path.read_text())
                except FileNotFoundError:
                    continue                # settled by another process just now
                except ValueError:          # died while recording it: nothing was written
                    intent = None
                if intent is not None:
                    what = _settle(rt.space(intent["namespace"]), intent)
                    notes.append(f"an import stopped while writing session "
                                 f"{intent['session_id']!r} of namespace "
                                 f"{intent['namespace']!r}: {what}")
                path.unlink(missing_ok=True)
            finally:
                lock.release()
            _lock_of(path).unlink(missing_ok=True)
        return notes


def _lock_of(intent: Path) -> Path:
    return intent.with_name(intent.name + ".lock")


def _settle(space: Space, intent: dict[str, Any]) -> str:
    with space.store.write_lock(space.namespace):
        space.see_latest("sources", "sessions", "memories")
        sources = intent["source_ids"]
        if not sources or space.sources.get(sources[:1]):   # one commit: all of them or none
            return "it had completed"
        space.memories.delete(intent["memory_ids"])
        before = intent["session"]
        if before is None:
            space.sessions.delete([intent["session_id"]])
        else:
            space.sessions.put(_decode(before))
        return "what it had written was undone (import the file again)"
