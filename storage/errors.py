"""Errors the storage layer raises; the tools turn them into MCP tool errors."""


class StorageError(RuntimeError):
    """The store could not complete an operation (unwritable folder, disk full, conflict)."""


class NotFound(KeyError):
    """No row with that id (in that namespace)."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else "not found"
