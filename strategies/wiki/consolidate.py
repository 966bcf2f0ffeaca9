"""``consolidate`` for wiki: compact trajectories and refresh pages, keeping history.

Compaction = a full deterministic replay of every snapshot (it merges what incremental appends
split when sessions arrived out of order, and re-derives claim ops), then a page rebuild.
Nothing is deleted: snapshots and claims (revised and deprecated ones too) all stay.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .curate import replay
from .pages import rebuild
from .store import CLAIM, PAGE, count_trajectories, ensure

if TYPE_CHECKING:
    from ..space_api import StrategySpace


def consolidate(space: StrategySpace, st, dry_run: bool, progress, m: int) -> dict:
    """``st``: the namespace's ``curate.WikiState``."""
    ensure(space)
    before = {"trajectories": count_trajectories(space), "claims": space.derived.count_rows(CLAIM),
              "pages": space.derived.count_rows(PAGE)}
    if dry_run:
        return {"before": before, "after": before, "clusters": 0, "operations": []}
    if progress:
        progress(0, 2, "replaying trajectories")
    info = replay(space, st, m)
    if progress:
        progress(1, 2, "rebuilding wiki pages")
    pages = rebuild(space)
    if progress:
        progress(2, 2, "done")
    after = {"trajectories": count_trajectories(space), "claims": space.derived.count_rows(CLAIM),
             "pages": space.derived.count_rows(PAGE)}
    return {"before": before, "after": after, "clusters": info.get("trajectories", 0),
            "operations": [{"op": "replay", **info}, {"op": "rebuild_pages", **pages}]}
