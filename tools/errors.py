"""The failures a tool call can anticipate, and storage failures the user can fix.

``ToolFailure`` is what the service layer (``tools/``) raises for a failure it saw coming: an
empty query, an unknown namespace, a full disk. Its message is written for the host's model.
The service layer never imports the MCP SDK (``tests/test_layers.py``): the CLI, the exporter
and importer and the benchmarks call it directly. The MCP adapters (``server/mcp_tools.py``,
``server/resources.py``) hand a ``ToolFailure`` to the SDK as its ``ToolError`` (the call then
returns ``is_error`` with the message) or, in a resource read, as its ``ResourceError``.

LanceDB reports the storage failures as OSError or RuntimeError with the operating system's
message inside; a write that fails this way never half-commits (a LanceDB commit is atomic), so
the message can truthfully say that nothing was stored.
"""

from __future__ import annotations

from ..storage.errors import StorageError


class ToolFailure(Exception):
    """An anticipated failure of a tool call; ``str(exc)`` is the message for the host's model."""


KNOWN = [
    (("no space left", "disk quota", "enospc"),
     "the memory folder {home} is full: nothing was stored; free some space and retry"),
    (("read-only file system", "permission denied", "erofs", "eacces", "access denied"),
     "the memory folder {home} is not writable (read-only or no permission): nothing was "
     "stored; point TRIMEM_HOME at a writable folder"),
]


def translate(exc: BaseException, home: str) -> ToolFailure | None:
    """The user-fixable storage failure ``exc`` is, as a ``ToolFailure``; None if it is not one.
    The storage layer's own errors (a lock that is busy or unusable, a store too new) carry a
    message written for the user already."""
    if isinstance(exc, StorageError):
        return ToolFailure(str(exc))
    text = str(exc).lower()
    for needles, message in KNOWN:
        if any(n in text for n in needles):
            return ToolFailure(message.format(home=home))
    return None
