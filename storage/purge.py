"""Hard delete on disk: the data files a forget must not leave behind.

A LanceDB delete only marks rows deleted (a deletion file beside the data file); the row's bytes
stay in the data file until a compaction rewrites it. ``optimize`` rewrites a data file only when
more than 10% of its rows are deleted or when it can merge it with a neighbouring small file: a
forget of one message in a table compacted into one file left that message's text on disk,
readable with ``grep``, in the version every reader uses. LanceDB's Python API does not expose
the compaction's options (pylance does, a second copy of Lance trimem does not install), so:

1. :func:`live_fragments` lists the data files (fragments) that hold live rows, from each row's
   address (``_rowid``: fragment id in the high 32 bits while stable row ids are off, as here);
2. :func:`scrub` rewrites one live row (an update writes it to a new small fragment), so the
   compaction that follows has a neighbour to merge every other small fragment with and rewrites
   them all without their deleted rows; a fragment the compaction leaves (one of a million rows
   or more) has its live rows written anew by an update of its row-address range (every row of
   it then deleted, LanceDB drops it);
3. then no fragment that held a row before is still there: every deleted row's bytes went with
   the old files, which the purge (``cleanup_older_than=0``) deletes.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from .db import retrying, sql_str
from .errors import StorageError
from .lance import quiet_purge_warning

log = logging.getLogger(__name__)
KEYS = ("id", "recall_id", "session_id", "key", "name")   # each table's unique column
HIDDEN = ("_rowid", "_distance", "_score", "_relevance_score")
COMPACTIONS = 2   # compactions tried before a data file left out is written anew


def live_fragments(tbl) -> dict[int, int]:
    """The data files (fragment ids) that hold live rows of ``tbl``, each with the highest row
    offset in use."""
    out: dict[int, int] = {}
    for r in tbl.search().select([_key(tbl)]).with_row_id(True).limit(None).to_list():
        frag, offset = int(r["_rowid"]) >> 32, int(r["_rowid"]) & 0xFFFFFFFF
        out[frag] = max(offset, out.get(frag, 0))
    return out


def _key(tbl) -> str:
    names = tbl.schema.names
    key = next((k for k in KEYS if k in names), None)
    if key is None:
        raise StorageError(f"table {tbl.name} has no key column to rewrite its rows by")
    return key


def purge_versions(tbl) -> None:
    """Compact ``tbl`` and delete every version but the newest (and the files only they use)."""
    quiet_purge_warning()
    retrying(lambda: tbl.optimize(cleanup_older_than=timedelta(0)), "purge", table=tbl)


def scrub(tbl) -> None:
    """Rewrite every data file of ``tbl`` (so none keeps a deleted row's bytes) and delete the
    old versions; :class:`StorageError` if a data file from before is still in use after."""
    before = live_fragments(tbl)
    key = _key(tbl)
    if before:
        one = tbl.search().select([key]).limit(1).to_list()[0][key]
        retrying(lambda: tbl.update(where=f"{key} = {sql_str(one)}", values={key: one}),
                 "scrub: rewrite one row", table=tbl)
    left = set(before)
    for _ in range(COMPACTIONS):   # the first compaction after the update may not merge yet
        purge_versions(tbl)
        left &= set(live_fragments(tbl))
        if not left:
            return
    for frag in sorted(left):   # not merged (a large data file): its rows written anew
        lo, hi = frag << 32, (frag + 1) << 32
        retrying(lambda lo=lo, hi=hi: tbl.update(where=f"_rowid >= {lo} AND _rowid < {hi}",
                                                 values_sql={key: key}),
                 "scrub: rewrite a data file", table=tbl)
    purge_versions(tbl)
    left &= set(live_fragments(tbl))
    if left:
        raise StorageError(f"{tbl.name}: data files {sorted(left)} could not be rewritten; "
                           "deleted text may still be on disk: call forget again")
