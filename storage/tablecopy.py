"""The in-process copy of a whole derived table (:class:`TableCopy`): read in full when another
process changed it, patched when this process did.

Why patch: curation rewrites a strategy's tables a few rows at a time (a session's snapshots,
the pages and groups they touch, its threads and memories) and reads them again between
writes. Reading the whole table after each of its own commits made the wiki's copies about a
tenth of curation's time at 4,000 stored turns; past ``snapshot.BULK_RELOAD_MAX_ROWS`` rows
curation's reads of a copy it cannot patch go to LanceDB instead (5-9 ms a query; a quarter of
its samples at 10,000 turns). Those are not reloaded for curation on purpose: kept current,
the copies only curation reads (hybrid's memories, the wiki's claims, groups and snapshots)
made the copies hold up to 225 MB during a 20,000-turn drain instead of 98 MB, growing with
the store, for a drain 22 % shorter (``bench/README.md``, "Curation throughput").

How: a commit by this process (``Derived.upsert``, ``Derived.delete_rows``, ``Memories.add``
and ``delete``, a session's row written or deleted) tells the copy, through
``SpaceCore.wrote_copy`` or ``wrote_where``, the version it made and the keys of the rows it
changed (``Copy.wrote``; the key column is ``id``, or ``session_id`` for the sessions). A delete
by another column (a session's threads, the edges touching them; a merge that deletes the rows
its source lacks) names the rows it took through the copy itself: the copy holds the version
the commit was made on (``matching``: the filter evaluated as LanceDB does), else it is only
told that the table changed. When every version between the copy's and the table's is such
a commit, the copy fetches only the rows of those keys that are still stored (one filtered
query) and keeps its other rows. The result is the state a full read gives, rows and order:
LanceDB writes a replaced or inserted row as a new row at the end of the table and a deleted one
is gone, so the table is the copy's unchanged rows in their order,
then the changed rows in their address order (``_rowid``: fragment, then offset; stable row ids
are off in this store). A commit of another process, a compaction or an index build in between
(a version no ``wrote`` names) makes the copy read the table in full (for curation's reads
past ``BULK_RELOAD_MAX_ROWS``: LanceDB answers them); so does a fetch that saw a newer version
than the one patched to.

Columns a strategy names (``SpaceCore.omit_from_copy``: a wiki page's text, a trajectory's
builder state) are not kept: a read that asks for one, or for every column, goes to LanceDB.
At 20,000 turns they were 70 % and 68 % of those two tables' bytes and no recall reads them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from .budget import CopyBudget
from .db import sql_in
from .snapshot import FETCH_CHUNK, Copy, State, Unsupported, dicts, eq_mask, matrix, vector_state


class TableCopy(Copy):
    """A whole derived table (rows as LanceDB returns them, vectors apart), read again when it
    changes (by a reader that is not a bulk writer), patched after this process's own commits."""

    def __init__(self, namespace: str, max_rows: int, follows_bulk_writes: bool = False,
                 budget: CopyBudget | None = None, key: str = "id",
                 omits: frozenset[str] = frozenset()):
        super().__init__(namespace, max_rows, budget)
        self.follows_bulk_writes = follows_bulk_writes   # True: a table bulk writers do not write
        self.key = key   # the column naming a row (what ``wrote`` is told)
        self.omits = omits   # columns not kept (``SpaceCore.copy_serves``)

    def matching(self, tbl, version: int, eq: dict[str, Any]) -> frozenset[str] | None:
        """The keys of this namespace's rows matching ``eq`` (``derived._where``'s equality
        filters) in the table at ``version``, when this copy holds that version read through
        ``tbl``; else None. What a delete by another column than the key changed: the copy
        evaluates the filter as LanceDB does (``snapshot.eq_mask``)."""
        state = self._state
        if state is None or state.too_big or state.tbl is not tbl or state.version != version:
            return None
        try:
            hit = np.flatnonzero(eq_mask(state, eq))
        except Unsupported:
            return None
        return frozenset(str(state.rows[n].get(self.key)) for n in hit)

    def _load(self, tbl, version: int, old: State | None) -> State:
        data = self._kept(tbl.to_arrow())
        vecs = None
        if "vector" in data.column_names:
            vecs = matrix(data) if data.num_rows else None
            data = data.drop_columns(["vector"])
        rows = dicts(data, data.column_names)   # e.g. the sessions' five timestamp columns
        keep = [n for n, r in enumerate(rows) if r.get("namespace") == self.namespace]
        if len(keep) < len(rows) and vecs is not None:
            vecs = np.asarray(vecs).reshape(len(rows), -1)[keep]
        return vector_state(tbl, version, [rows[n] for n in keep], vecs)

    def _kept(self, data: pa.Table) -> pa.Table:
        """``data`` without the columns this copy omits."""
        gone = [c for c in data.column_names if c in self.omits]
        return data.drop_columns(gone) if gone else data

    def _patch(self, tbl, version: int, old: State) -> State | None:
        changed = self._changed(old.version, version)
        ids = sorted(changed)
        got = [tbl.search().where(sql_in(self.key, ids[i:i + FETCH_CHUNK])).with_row_id(True)
               .limit(None).to_arrow() for i in range(0, len(ids), FETCH_CHUNK)]
        if tbl.version != version:
            return None   # the fetch may have seen another process's commit since: read it all
        data = self._kept(pa.concat_tables(got)) if got else pa.table({})
        if data.num_rows:
            order = np.argsort(data["_rowid"].to_numpy(), kind="stable")
            data = data.take(pa.array(order)).drop_columns(["_rowid"])
            mine = data["namespace"].to_numpy(zero_copy_only=False) == self.namespace
            data = data if mine.all() else data.filter(pa.array(mine))
        vecs = None
        if data.num_rows and "vector" in data.column_names:
            vecs = matrix(data)
            data = data.drop_columns(["vector"])
        keep = [n for n, r in enumerate(old.rows) if r.get(self.key) not in changed]
        if (old.mat is None) != (vecs is None) and keep and data.num_rows:
            return None   # the copy and the table disagree on having vectors: read it all
        new_rows = dicts(data, data.column_names) if data.num_rows else []
        if old.rows and new_rows and list(new_rows[0]) != list(old.rows[0]):
            return None   # the columns changed (a reshape): read it all
        rows = [old.rows[n] for n in keep] + new_rows
        mats = ([old.mat[keep]] if old.mat is not None and keep else []) + \
            ([vecs] if vecs is not None else [])
        return vector_state(tbl, version, rows, np.concatenate(mats) if mats else None)
