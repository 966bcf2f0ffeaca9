"""Build (or rebuild) one table's vector index in a child process.

Run as ``python -m trimem.storage.index_build <uri> <table>``. Building an HNSW index over
100k vectors takes 20-30 s on two cores, and in-process it held LanceDB's single background
event loop for all of it: every search and write of the server waited (recall p95 went from
40 ms to 30 s while it ran). A child process has its own loop; the server keeps serving from the
old index (or a flat scan) and picks the new one up through its read-consistency check.

The child runs at a lower CPU priority so the requests of the server come first. It commits
against the newest version and retries when a concurrent compaction (a Rewrite) pre-empts it.
"""

from __future__ import annotations

import os
import sys
import time

from .lance import lancedb   # imported with the validators deferred (lance.py)
from lancedb.index import HnswSq


def build(uri: str, table: str, attempts: int = 6) -> int:
    tbl = lancedb.connect(uri).open_table(table)
    for i in range(attempts):
        try:
            tbl.checkout_latest()
            n = tbl.count_rows()
            tbl.create_index("vector", config=HnswSq(distance_type="cosine"), replace=True)
            return n
        except (OSError, RuntimeError, ValueError) as exc:
            msg = str(exc).lower()
            if not ("conflict" in msg or "retry" in msg or "concurrent" in msg) or i == attempts - 1:
                raise
            time.sleep(0.5 * (i + 1))
    raise AssertionError("unreachable")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m trimem.storage.index_build <uri> <table>", file=sys.stderr)
        return 2
    try:
        os.nice(10)
    except OSError:
        pass
    n = build(argv[0], argv[1])
    print(n)   # the parent records how many rows the index covers
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
