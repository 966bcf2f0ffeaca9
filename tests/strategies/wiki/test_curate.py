"""Incremental wiki curation (real LanceDB in a temp folder, real embedder, no mocks): a new
session or an append only adds snapshots, extends the trajectories it joins and rewrites the pages
it touches; the result equals a full rebuild."""

import pytest

from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies.wiki import curate, pages, store
from trimem.strategies.wiki.strategy import WikiStrategy
from trimem.tools.remember import Message, remember

from helpers import WIKI_SESSIONS

SESSIONS = WIKI_SESSIONS
MORE_S3 = [("Cara", "My first pottery bowl cracked in the kiln, sadly."),
           ("Dev", "Kiln Studio will teach you to glaze it next time.")]


@pytest.fixture
def rt(home, tmp_path_factory):
    server = build_server(Settings(home=str(home), curation=False))
    rt = server.runtime
    st = rt.store     # no background compaction: it would move rows and change their row ids
    st.optimize_every_commits, st.optimize_every_rows, st.optimize_idle_s = 10**9, 10**9, 10**9
    return rt


def say(rt, wiki, sid, when, turns, start=0):
    msgs = [Message(content=t, speaker=sp, ref=f"{sid}-{start + i}") for i, (sp, t) in
            enumerate(turns)]
    remember(rt, msgs, session_id=sid, session_time=when, namespace="default")
    wiki.curate(rt.env("default"), sid)


def maps_of(rt):
    """The namespace's cached turn maps, as a recall reads them."""
    from trimem.strategies.wiki import turnmap

    return turnmap.turn_maps(curate.state_of(rt.context("default")).maps, rt.space("default"))


def rows_with_ids(space, kind) -> dict[str, dict]:
    """Every row with its physical row id (a rewritten row gets a new one)."""
    tbl = space.derived.table(kind)
    out = tbl.search().with_row_id(True).limit(None).to_list()
    return {r["id"]: r for r in out}


def same(a: dict, b: dict) -> bool:
    return a["_rowid"] == b["_rowid"] and {k: str(v) for k, v in a.items()} == \
        {k: str(v) for k, v in b.items()}


def test_new_session_and_append_rewrite_only_what_they_touch(rt):
    wiki = WikiStrategy()
    for sid, when, turns in SESSIONS[:2]:
        say(rt, wiki, sid, when, turns)
    space = rt.space("default")
    before = {k: rows_with_ids(space, k) for k in (store.SNAP, store.TRAJ, pages.PAGE)}
    assert {"wiki-entity-rex", "wiki-entity-berlin"} <= set(before[pages.PAGE])

    say(rt, wiki, *SESSIONS[2])
    after = {k: rows_with_ids(space, k) for k in (store.SNAP, store.TRAJ, pages.PAGE)}
    new_snaps = set(after[store.SNAP]) - set(before[store.SNAP])
    assert new_snaps and all(after[store.SNAP][i]["session_id"] == "s3" for i in new_snaps)
    assert all(same(r, after[store.SNAP][i]) for i, r in before[store.SNAP].items())
    joined = {t for t, r in after[store.TRAJ].items() if set(r["snapshot_ids"]) & new_snaps}
    untouched = set(before[store.TRAJ]) - joined
    assert untouched and all(same(before[store.TRAJ][t], after[store.TRAJ][t]) for t in untouched)
    for pid in ("wiki-entity-rex", "wiki-entity-berlin", "wiki-entity-ana"):   # not in s3
        assert same(before[pages.PAGE][pid], after[pages.PAGE][pid]), pid
    assert after[pages.PAGE]["wiki-index"]["_rowid"] != before[pages.PAGE]["wiki-index"]["_rowid"]
    assert "wiki-entity-kiln-studio" in after[pages.PAGE]

    # appending to s3: only the new messages become snapshots; s3's first ones stay as they were
    say(rt, wiki, "s3", None, MORE_S3, start=2)
    again = rows_with_ids(space, store.SNAP)
    added = set(again) - set(after[store.SNAP])
    assert len(added) == 1 and again[added.pop()]["refs"] == ["s3-2", "s3-3"]
    assert all(same(r, again[i]) for i, r in after[store.SNAP].items())
    placed = [i for t in space.derived.rows(store.TRAJ) for i in t["snapshot_ids"]]
    assert sorted(placed) == sorted(again)          # every snapshot in exactly one trajectory


def page_view(space) -> dict:
    return {r["id"]: (r["title"], r["text"], r["trajectory_ids"], r["names"], r["facets"],
                      r["hub"], r["n_links"], str(r["first_time"]), str(r["last_time"]),
                      [round(x, 4) for x in r["vector"]]) for r in space.derived.rows(pages.PAGE)}


def test_incremental_pages_equal_a_full_rebuild(rt):
    wiki = WikiStrategy()
    for sid, when, turns in SESSIONS:
        say(rt, wiki, sid, when, turns)
    say(rt, wiki, "s3", None, MORE_S3, start=2)
    space = rt.space("default")
    incremental = page_view(space)
    pages.rebuild(space)
    assert page_view(space) == incremental


@pytest.mark.slow
def test_many_sessions_and_appends_still_equal_a_full_rebuild(rt):
    """Enough synthetic sessions for hub pages, hub flags that flip as trajectories multiply,
    full trajectories continued by new ones, revisions; each session arrives in two calls."""
    from trimem.bench.synth import Synth

    wiki = WikiStrategy()
    wiki.m = 4                  # short trajectories, so full ones get continued
    for _, (sid, when, msgs) in zip(range(12), Synth(seed=3).sessions()):
        for part in (msgs[:9], msgs[9:]):
            remember(rt, [Message(**m) for m in part], session_id=sid, session_time=when,
                     namespace="default")
            wiki.curate(rt.env("default"), sid)
    space = rt.space("default")
    trajs = space.derived.rows(store.TRAJ)
    assert len(trajs) >= 10 and any(t["continues"] for t in trajs)
    incremental = page_view(space)
    assert any(v[5] for v in incremental.values() if v[0] != "index")      # some hub pages
    pages.rebuild(space)
    assert page_view(space) == incremental


def test_a_curation_after_a_lost_write_repairs_itself(rt):
    """Snapshots stored but never placed in a trajectory (a crash between the two writes) are
    placed by the next curation of their session, and the pages catch up."""
    wiki = WikiStrategy()
    say(rt, wiki, *SESSIONS[0])
    space = rt.space("default")
    sid, when, turns = SESSIONS[1]
    remember(rt, [Message(content=t, speaker=sp, ref=f"{sid}-{i}") for i, (sp, t) in
                  enumerate(turns)], session_id=sid, session_time=when, namespace="default")
    lost = curate.new_snapshots(space, sid)      # written, then the process "dies"
    assert lost
    wiki2 = WikiStrategy()                       # a new process: no in-memory index
    wiki2.curate(rt.env("default"), sid)
    placed = {i for t in space.derived.rows(store.TRAJ) for i in t["snapshot_ids"]}
    assert {s.id for s in lost} <= placed
    assert "Rex chewed my new running shoes again." in \
        space.derived.rows(pages.PAGE, eq={"id": "wiki-entity-rex"})[0]["text"]


def test_wiki_tables_get_scalar_indexes_and_lookups_still_see_later_rows(rt):
    rt.store.scalar_index_min_rows = 0       # indexes however small the tables
    wiki = WikiStrategy()
    for sid, when, turns in SESSIONS[:2]:
        say(rt, wiki, sid, when, turns)
    space = rt.space("default")
    for kind, cols in store.INDEXES.items():
        got = {ix.columns[0]: ix.index_type for ix in space.derived.table(kind).list_indices()}
        assert set(cols) <= set(got), kind
        assert all((got[c].lower() == "bitmap") == (how == "bitmap") for c, how in cols.items())
    # rows written after the indexes (no optimize in this fixture: they stay unindexed) are found
    say(rt, wiki, *SESSIONS[2])
    snaps = space.derived.rows(store.SNAP, eq={"session_id": "s3"}, columns=["id", "session_id"])
    assert snaps and {s["session_id"] for s in snaps} == {"s3"}
    assert space.derived.rows(pages.PAGE, eq={"key": ["cara"]}, columns=["id"])
    assert len(space.derived.rows(store.TRAJ, eq={"status": "open"}, columns=["id"])) >= 1
    store.index_tables(space)    # idempotent


def test_turn_maps_are_reused_until_curation_changes_the_wiki(rt):
    """``score_turns``' maps (turn -> trajectory / snapshot, inventory claims) are read once per
    wiki change, not per recall, and a new session's turns are in them right after its curation."""
    wiki = WikiStrategy()
    for sid, when, turns in SESSIONS[:2]:
        say(rt, wiki, sid, when, turns)
    space = rt.space("default")
    first = maps_of(rt)
    assert maps_of(rt) is first                     # nothing changed: the same maps
    ids = {r.ref: r.id for r in space.sources.all()}
    assert ids["s1-0"] in first.t_of and ids["s1-0"] in first.s_of
    traj = first.t_of[ids["s1-0"]]
    assert ids["s1-0"] in first.members[traj]
    sid, when, turns = SESSIONS[2]
    say(rt, wiki, sid, when, turns)
    after = maps_of(rt)
    ids = {r.ref: r.id for r in space.sources.all()}
    assert after is not first and ids["s3-0"] in after.t_of and ids["s3-0"] not in first.t_of
    claimed = {s for v in after.inv.values() for s, _ in v}
    assert ids["s3-0"] in claimed and claimed <= set(ids.values())   # claims cite stored turns


def test_turn_maps_follow_curation_without_a_reread_and_forget_drops_them(rt, monkeypatch):
    """Curation in this process applies its new snapshots and trajectory rows to the cached turn
    maps (no full re-read: the re-check interval is made endless, so only the patch can make them
    current); the patched maps equal a fresh read. A forget drops them."""
    from trimem.strategies.wiki import turnmap

    monkeypatch.setattr(turnmap, "RECHECK_S", 1e9)
    wiki = WikiStrategy()
    say(rt, wiki, *SESSIONS[0])
    space = rt.space("default")
    first = maps_of(rt)
    for sid, when, turns in SESSIONS[1:]:
        say(rt, wiki, sid, when, turns)
    say(rt, wiki, "s3", SESSIONS[2][1], MORE_S3, start=len(SESSIONS[2][2]))   # an append
    patched = maps_of(rt)
    assert patched is not first and set(patched.t_of) > set(first.t_of)
    curate.state_of(rt.context("default")).maps.invalidate()
    fresh = maps_of(rt)
    assert fresh is not patched
    for f in ("t_of", "s_of", "members", "snaps", "counts"):
        assert getattr(patched, f) == getattr(fresh, f), f
    assert {s: sorted(v, key=str) for s, v in patched.inv.items()} == \
        {s: sorted(v, key=str) for s, v in fresh.inv.items()}
    gone = space.sources.by_session("s2")[0].id
    assert gone in fresh.t_of
    wiki.forget(rt.env("default"), {gone})
    assert gone not in maps_of(rt).t_of


def test_recalls_during_a_wiki_write_keep_the_turn_maps(rt, monkeypatch):
    from trimem.strategies.wiki import turnmap

    monkeypatch.setattr(turnmap, "RECHECK_S", 0.0)
    wiki = WikiStrategy()
    say(rt, wiki, *SESSIONS[0])
    space = rt.space("default")
    maps = maps_of(rt)
    snap = space.derived.rows(store.SNAP, columns=["id"])[0]["id"]
    with curate.state_of(rt.context("default")).maps.writing():
        space.derived.delete_rows(store.SNAP, {"id": [snap]})
        assert maps_of(rt) is maps
    assert snap not in maps_of(rt).snaps    # no note: the moved counts re-read


def test_one_recalls_reads_are_shared_by_its_attempts(rt, monkeypatch):
    from trimem.strategies.wiki.route import TRAJ_COLS
    from trimem.strategies.wiki.strategy import _Reads

    wiki = WikiStrategy()
    for sid, when, turns in SESSIONS:
        say(rt, wiki, sid, when, turns)
    space = rt.space("default")
    ids = sorted(r["id"] for r in space.derived.rows(store.TRAJ, columns=["id"]))
    reads = _Reads(space, None)  # pyright: ignore[reportArgumentType]
    assert [r.id for r in reads.trajectories(ids[:1], TRAJ_COLS)] == ids[:1]
    both = reads.trajectories(ids, TRAJ_COLS)
    assert {r.id: str(dict(r.view(TRAJ_COLS), vector=r.vector.tolist())) for r in both} == \
        {r["id"]: str(r) for r in space.derived.rows(store.TRAJ, eq={"id": ids}, columns=TRAJ_COLS)}
    calls = []
    space_rows = space.derived.rows
    monkeypatch.setattr(space.derived, "rows", lambda *a, **k: calls.append(a) or space_rows(*a, **k))
    assert len(reads.trajectories(ids, TRAJ_COLS)) == len(ids) and calls == []   # this recall's


def test_the_next_recall_reuses_the_rows_until_the_table_changes(rt):
    """Trajectory rows (and what each is about) are kept with the table's copy: a later
    recall's reads of the same table version read none again; after curation rewrites the
    table the rows are read afresh, and are the new ones."""
    from trimem.strategies.wiki.route import TRAJ_COLS, traj_keys
    from trimem.strategies.wiki.strategy import _Reads

    wiki = WikiStrategy()
    for sid, when, turns in SESSIONS[:-1]:
        say(rt, wiki, sid, when, turns)
    space = rt.space("default")
    ids = sorted(r["id"] for r in space.derived.rows(store.TRAJ, columns=["id"]))
    first = _Reads(space, None)  # pyright: ignore[reportArgumentType]
    rows = first.trajectories(ids, TRAJ_COLS)
    assert all(first.keys(r) == traj_keys(r) for r in rows)
    calls = []
    space_rows = space.derived.rows
    space.derived.rows = lambda *a, **k: calls.append(a) or space_rows(*a, **k)
    try:
        again = _Reads(space, None).trajectories(ids, TRAJ_COLS)  # pyright: ignore[reportArgumentType]
        assert [r is s for r, s in zip(again, rows)] == [True] * len(ids) and calls == []
    finally:
        del space.derived.rows
    say(rt, wiki, *SESSIONS[-1])
    ids = sorted(r["id"] for r in space.derived.rows(store.TRAJ, columns=["id"]))
    fresh = _Reads(space, None).trajectories(ids, TRAJ_COLS)  # pyright: ignore[reportArgumentType]
    assert {r.id: str(dict(r.view(TRAJ_COLS), vector=r.vector.tolist())) for r in fresh} == \
        {r["id"]: str(r) for r in space.derived.rows(store.TRAJ, eq={"id": ids}, columns=TRAJ_COLS)}
    assert any(r is not s for r, s in zip(fresh, rows))


HOST_SESSION = [("assistant", "Welcome back! Yesterday we set up the staging database."),
                ("user", "Right. Today I want the nightly backup to run at two."),
                ("assistant", "Done: the backup job now runs at 02:00 and keeps seven copies."),
                ("user", "Also my laptop is now a ThinkPad, the old Mac went to my sister."),
                ("assistant", "Noted, I will use the Linux build commands from now on."),
                ("assistant", "One more thing: the staging password rotates on Fridays."),
                ("user", "Thanks, that is all for today.")]


def snapshot_cuts(space) -> list[list[str]]:
    snaps = sorted(space.derived.rows(store.SNAP), key=lambda s: s["idx"])
    by_id = {r.id: r.ref for r in space.sources.all()}
    return [[by_id[i] for i in s["source_ids"]] for s in snaps]


def test_a_host_session_kept_one_exchange_at_a_time_is_cut_as_if_kept_at_once(home, tmp_path):
    """A host's hooks (or a host calling remember after every reply) store an agent session one
    exchange at a time, and the assistant often speaks first. Each curation then sees only the
    new messages; the exchanges must still open at the user's turns, as when the whole session
    is remembered in one call (before, the session's first speaker -- here the assistant --
    opened them, and the appended user turns were cut off their replies)."""
    cuts = []
    for n, batches in ((0, [HOST_SESSION]),
                       (1, [HOST_SESSION[:1], HOST_SESSION[1:3], HOST_SESSION[3:6],
                            HOST_SESSION[6:]])):
        server = build_server(Settings(home=str(tmp_path / f"h{n}"), curation=False))
        rt, wiki, start = server.runtime, WikiStrategy(), 0
        for part in batches:
            say(rt, wiki, "s1", "2026-11-02T09:00:00", part, start=start)
            start += len(part)
        cuts.append(snapshot_cuts(rt.space("default")))
        rt.close()
    whole, kept = cuts
    assert whole == [["s1-0"], ["s1-1", "s1-2"], ["s1-3", "s1-4", "s1-5"], ["s1-6"]]
    assert kept == whole
