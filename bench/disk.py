"""Bytes on disk of a memory folder: per stored turn and per logged recall.

    python -m trimem.bench.disk --home <memory folder> [--settle] [--columns]

Sums the sizes of the files under ``--home`` (and counts them), table by table kind, and divides
by the turns (rows of every ``sources`` table) and the recalls (rows of every ``recalls``
table). ``--settle`` first compacts each namespace's tables and deletes every superseded version
(``Space.upkeep.optimize(purge=True)``): what upkeep leaves ``keep_versions`` after its last compaction;
without it the folder is measured as the last process left it. Copy a folder to measure with
``cp -a``: a copy that resets the files' times (``cp -r``) makes LanceDB's cleanup keep the old
versions' data files (it deletes only files older than its cutoff) and they stay for 7 days.
``--replay NS`` first deletes namespace NS's recall log and writes its records again, in order,
through this code's ``Log.add_recall`` (each trace as the recall produced it: its stored form read
back with the texts filled in, as ``explain`` reads it), so one run's recalls measure another
version's log format and upkeep; then it waits ``keep_versions`` and lets upkeep finish.
``--columns`` adds ``live_columns``: the bytes of the rows each table holds at its current
version (Arrow, uncompressed), per column, per turn: what the rows hold, apart from dead rows
and the files' compression.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path


def measure(home: Path) -> dict:
    import lancedb

    size, files = Counter(), Counter()
    for p in home.rglob("*"):
        if p.is_file():
            top = p.relative_to(home).parts[0]
            kind = re.sub(r"^ns_.+?__|__.*$|\.lance$", "", top)
            size[kind] += p.stat().st_size
            files[kind] += 1
    db = lancedb.connect(str(home))
    rows = Counter()
    for name in db.list_tables().tables:
        kind = re.sub(r"^ns_.+?__|__.*$", "", name)
        if kind in ("sources", "recalls"):
            rows[kind] += db.open_table(name).count_rows()
    total = sum(size.values())
    return {"bytes": total, "files": sum(files.values()), "turns": rows["sources"],
            "recalls": rows["recalls"],
            "bytes_per_turn": round(total / rows["sources"]) if rows["sources"] else None,
            "recall_log_bytes": size["recalls"], "recall_log_files": files["recalls"],
            "bytes_per_recall": (round(size["recalls"] / rows["recalls"])
                                 if rows["recalls"] else None),
            "by_table": {k: {"bytes": size[k], "files": files[k]} for k in sorted(size)}}


def live_columns(home: Path) -> dict:
    """Bytes per stored turn of each table kind's current rows, in total and by column."""
    import lancedb

    db = lancedb.connect(str(home))
    by: dict[str, Counter] = {}
    turns = 0
    for name in db.list_tables().tables:
        kind = re.sub(r"^ns_.+?__|__.*$", "", name)
        data = db.open_table(name).to_arrow()
        if kind == "sources":
            turns += data.num_rows
        cols = by.setdefault(kind, Counter())
        for col, arr in zip(data.column_names, data.columns):
            cols[col] += arr.nbytes
    n = max(turns, 1)
    return {k: {"bytes_per_turn": round(sum(c.values()) / n),
                "columns": {col: round(b / n) for col, b in c.most_common()}}
            for k, c in sorted(by.items())}


def settle(home: Path) -> None:
    from ..storage import open_store

    store = open_store(home)
    for ns in store.namespaces():
        store.space(ns).upkeep.optimize(purge=True)
    store.close()


def replay(home: Path, ns: str) -> int:
    import time

    from ..server.settings import Settings
    from ..storage.logs import RecallPolicy
    from ..tools.runtime import Runtime

    rt = Runtime(Settings(home=str(home), curation=False).to_config())
    sp = rt.env(ns).space
    tbl = sp.table("recalls")
    rows = sorted(tbl.search().limit(None).to_list(), key=lambda r: r["created_at"])
    traces = {r["recall_id"]: sp.log.get_recall(r["recall_id"]).trace for r in rows}  # as produced
    sp.store.drop_table(tbl.name)
    for r in rows:
        sp.log.add_recall(r["recall_id"], r["query"], r["strategy"], list(r["source_ids"] or []),
                      traces[r["recall_id"]], RecallPolicy())
    sp.log.flush()
    time.sleep(sp.upkeep.keep_versions.total_seconds() + 5)
    sp.upkeep.wait(600, flush=True)
    time.sleep(sp.upkeep.keep_versions.total_seconds() + 5)   # the last compaction's leftovers go
    rt.close()
    return len(rows)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--settle", action="store_true")
    ap.add_argument("--replay", default="", metavar="NS")
    ap.add_argument("--columns", action="store_true", help="also the live rows' bytes per turn, "
                    "by table and column")
    args = ap.parse_args(argv)
    home = Path(args.home)
    if args.replay:
        replay(home, args.replay)
    if args.settle:
        settle(home)
    out = measure(home)
    if args.columns:
        out["live_columns"] = live_columns(home)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
