"""Carrying memory in and out: the versioned JSONL export format, its import, a Markdown
rendering, and importers for files users already hold (the official MCP memory server's
``memory.json``, ChatGPT and Claude conversation exports). See docs/export-format.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from .bounds import Bounds, Deadline, Refusals

# the kinds of other tools' files `trimem import --from` reads (transfer/foreign.py); here, so
# that the CLI can list them without importing the format models on every command's start
FOREIGN = ("memory-json", "chatgpt", "claude")
KINDS = ("trimem", *FOREIGN)


def read_file(kind: str, path: Path, namespace: str | None, bounds: Bounds, refused: Refusals,
              deadline: Deadline) -> list:
    """The records of a file of ``kind`` (``trimem`` or one of :data:`FOREIGN`), read within
    ``bounds``: ``bounds.FileRefused`` when it cannot be read (another tool's records that
    cannot be read are added to ``refused``). ``namespace``: where the records go (a trimem
    export's own namespace when None; a trimem export of several namespaces cannot be moved)."""
    if kind == "trimem":
        from .format import read_export  # lazy: pydantic models, not at every command's start
        from .importer import retarget  # lazy: the tools layer, not at every command's start

        records = read_export(path, bounds, deadline)[1]
        return records if namespace is None else retarget(records, namespace)
    from .foreign import read_foreign  # lazy: the readers, not at every command's start

    return read_foreign(kind, path, namespace or "default", bounds, refused, deadline)
