"""What capture keeps beside the memory, as small files a hook process reads without LanceDB.

Under ``<home>/_capture/`` (for an object-store home, the user's state folder, one per home):

- ``pending/<transcript key>.<token>.json``: a hook saw new entries in a transcript; written by
  every ``Stop`` / ``PreCompact`` / ``SessionEnd`` hook, deleted by the drainer once that
  transcript has been read to its end *after* the marker was written;
- ``transcripts/<transcript key>.json``: per transcript, where the last capture ended (a byte
  offset at a line boundary), its namespace and session, and what that capture did (time,
  messages stored, already stored, skipped by reason, redactions, errors);
- ``digest/<namespace key>.json``: the ``SessionStart`` context of a namespace, with the forget
  stamp it was built under (``storage/names.py``);
- ``drain.lease``: held by the one process draining (a lease, ``storage/locks.py``: a drainer
  that died is taken over at once, one stopped or hung after ``DRAIN_LEASE_S``);
- ``drain.starting``: the pid of a drainer a hook has just started, until it holds the lock;
- ``drain.log``: the drainer's stderr; ``errors.jsonl``: the last hook failures.

Every JSON file is written beside and renamed, so a reader sees the old or the new one whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator
from datetime import datetime, timezone

import platformdirs

from ..storage.locks import LockBusy, check_path, holder_pid, lease_lock
from ..storage.private import private_umask

ERRORS_KEPT = 50
STARTING_S = 30.0   # how long a started drainer counts as running before it holds the lock
DRAIN_LEASE_S = 10.0   # a drainer silent this long (stopped, hung) loses the drain lock


def capture_dir(home: str) -> Path:
    if "://" in home:
        tag = hashlib.sha256(home.encode()).hexdigest()[:16]
        return Path(platformdirs.user_state_dir("trimem", appauthor=False)) / "capture" / tag
    return Path(home) / "_capture"


def transcript_key(path: str) -> str:
    """A stable file-name-safe key for a transcript path (its real path, hashed)."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        real = path
    return hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def write_json(path: Path, obj: Any) -> None:
    """``obj`` as JSON, written beside and renamed. ASCII with escapes: a path or id taken from a
    file name or a log may hold a lone surrogate, which UTF-8 cannot write."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, ensure_ascii=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


class CaptureState:
    """The capture folder of one memory home."""

    def __init__(self, home: str):
        private_umask()   # markers, cursors, digests and logs are the user's alone
        self.home = home
        self.root = capture_dir(home)

    # -- pending markers: one per hook event, so none is lost to a concurrent drain ---------
    def add_pending(self, marker: dict) -> Path:
        key = transcript_key(marker["transcript_path"])
        path = self.root / "pending" / f"{key}.{time.time_ns()}-{uuid.uuid4().hex[:8]}.json"
        write_json(path, marker)
        return path

    def pending(self) -> dict[str, list[Path]]:
        """Transcript key -> its markers, oldest first."""
        out: dict[str, list[Path]] = {}
        try:
            names = sorted(os.listdir(self.root / "pending"))
        except OSError:
            return out
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                out.setdefault(name.split(".", 1)[0], []).append(self.root / "pending" / name)
        return out

    # -- per transcript: the cursor and the last capture's report ----------------------------
    def cursor_path(self, key: str) -> Path:
        return self.root / "transcripts" / f"{key}.json"

    def cursor(self, key: str) -> dict:
        got = read_json(self.cursor_path(key))
        return got if isinstance(got, dict) else {}

    def save_cursor(self, key: str, record: dict) -> None:
        write_json(self.cursor_path(key), record)

    def transcripts(self) -> list[dict]:
        """Every transcript's record, newest capture first."""
        out = []
        try:
            names = os.listdir(self.root / "transcripts")
        except OSError:
            return out
        for name in names:
            if name.endswith(".json") and not name.startswith("."):
                rec = read_json(self.root / "transcripts" / name)
                if isinstance(rec, dict):
                    out.append(rec)
        return sorted(out, key=lambda r: str((r.get("last") or {}).get("at", "")), reverse=True)

    # -- failures a hook could only report on stderr -----------------------------------------
    def record_error(self, event: str, message: str) -> None:
        path = self.root / "errors.jsonl"
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            lines = path.read_text(encoding="utf-8").splitlines()[-(ERRORS_KEPT - 1):] \
                if path.exists() else []
            lines.append(json.dumps({"at": _now(), "event": event, "error": message[:500]},
                                    ensure_ascii=False))
            write_text(path, "\n".join(lines) + "\n")
        except OSError:
            pass   # the error still went to stderr

    def drainer_pid(self) -> int | None:
        """The pid of the running drainer (the lock's holder, or the one started and not yet
        holding it: the lock's marker may still name a drainer that was killed), or None when
        no drainer runs."""
        check_path(self.drain_path)   # a FIFO there: say so rather than read it
        pid = holder_pid(self.drain_path)
        if pid is not None and not self.holder_silent() and _alive(pid):
            return pid
        path = self.root / "drain.starting"
        try:
            age = time.time() - path.stat().st_mtime
            pid = int(path.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if 0 <= age < STARTING_S and _alive(pid) else None

    def errors(self) -> list[dict]:
        try:
            lines = (self.root / "errors.jsonl").read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    # -- the one drainer ----------------------------------------------------------------------
    @property
    def drain_path(self) -> Path:
        return self.root / "drain.lease"

    @contextmanager
    def drain_lock(self, wait_s: float = 0.0) -> Iterator[bool]:
        """Try to become the drainer: yields True when this process holds the lock. ``wait_s``:
        how long to wait for it (a drainer started in place of a silent one waits out the
        lease); a lock path that is not a regular file raises ``storage.locks.LockUnusable``."""
        self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock = lease_lock(self.drain_path, DRAIN_LEASE_S, DRAIN_LEASE_S + 5)
        with ExitStack() as stack:
            try:
                stack.enter_context(lock.hold(wait_s))
            except LockBusy:
                yield False
                return
            yield True

    def holder_silent(self) -> bool:
        """The drain lock's marker exists but its holder has not refreshed it for a lease: the
        drainer is stopped or hung (a new one may wait for the lease and take over)."""
        try:
            return time.time() - os.lstat(self.drain_path).st_mtime >= DRAIN_LEASE_S
        except OSError:
            return False

    def drainer_running(self) -> bool:
        """A live drainer holds the lock (its marker names a process that runs and was
        refreshed within a lease; the check takes no lock, so it never makes a drainer that is
        starting find the lock taken), or one was started under ``STARTING_S`` ago, is alive
        and has not taken the lock yet (a fresh interpreter needs a moment: without this, a
        check right after a start sees nobody, and a second start would race the first)."""
        return self.drainer_pid() is not None

    def mark_starting(self, pid: int) -> None:
        write_text(self.root / "drain.starting", f"{pid}\n")

    def clear_starting(self) -> None:
        (self.root / "drain.starting").unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False
    except OSError:
        pass
    if os.name != "posix":
        return True   # no cheap check: the age limit alone applies
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
