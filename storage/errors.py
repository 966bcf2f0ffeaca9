"""Errors the storage layer raises; the tools turn them into MCP tool errors."""


class StorageError(RuntimeError):
    """The store could not complete an operation (unwritable folder, disk full, conflict)."""


class ForgetRaced(StorageError):
    """A write computed under ``Space.fenced`` met a forget made since (by another process):
    what it computed may quote the forgotten text, so nothing of it was written. Compute it
    again: the forgotten rows are gone now."""


class NotFound(KeyError):
    """No row with that id (in that namespace)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"


def purged(exc: BaseException) -> bool:
    """Whether ``exc`` is LanceDB failing to find a file of the version a handle reads: a forget
    in another process purged that version (``Space.optimize(purge=True)``). Reading again on
    the newest version succeeds."""
    msg = str(exc).lower()
    return (isinstance(exc, (OSError, RuntimeError)) and "not found" in msg
            and ("lance error" in msg or ".lance" in msg))
