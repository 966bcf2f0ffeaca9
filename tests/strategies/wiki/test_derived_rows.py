"""What the wiki's derived rows hold (real LanceDB in a temp folder, real embedder).

A ``wiki_groups`` row: its state and, for a page's group, the running vector sum as float64
bytes; no page vector (the page keeps that). A ``wiki_snapshots`` row: no vector (its sources'
mean, computed when read). Tables written in the earlier shapes are rewritten into these with
what they held bit for bit, and curation goes on as before."""

import base64
import json

import numpy as np
import pyarrow as pa

from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies.wiki import claims, groups, pages, store
from trimem.strategies.wiki.strategy import WikiStrategy
from trimem.tools.remember import Message, remember

from helpers import WIKI_SESSIONS


def runtime(home):
    return build_server(Settings(home=str(home), curation=False)).runtime


def say(rt, sid, when, turns):
    msgs = [Message(content=t, speaker=sp, ref=f"{sid}-{i}") for i, (sp, t) in enumerate(turns)]
    remember(rt, msgs, session_id=sid, session_time=when, namespace="default")
    WikiStrategy().curate(rt.env("default"), sid)


def stored(space) -> pa.Table:
    return space.derived.table(store.GROUP).to_arrow()


def page_view(space) -> dict:
    return {r["id"]: (r["title"], r["text"], r["trajectory_ids"], r["n_links"],
                      [round(x, 4) for x in r["vector"]]) for r in space.derived.rows(pages.PAGE)}


def test_a_group_row_is_its_state_and_its_sum_in_bytes(home):
    rt = runtime(home)
    for s in WIKI_SESSIONS:
        say(rt, *s)
    space = rt.space("default")
    data = stored(space)
    assert set(data.column_names) == {"id", "namespace", "kind", "key", "live", "state", "sum"}
    assert space.name(store.GROUP).endswith(space.name("sources").rsplit("__", 1)[1])
    rows = data.to_pylist()
    assert rows and all(len(r["sum"]) in (0, 8 * space.vector_dim) for r in rows if r["live"])
    assert not any(r["sum"] for r in rows if not r["live"])
    assert not any("v" in json.loads(r["state"]) for r in rows)
    # each row: its sum (3,072 bytes at 384 dimensions) and a small state; the earlier shape
    # held the sum base64 in the state (4,096 characters) and a float32 vector (1,536 bytes)
    per_row = sum(c.nbytes for c in data.columns) / data.num_rows
    assert per_row < 8 * space.vector_dim + 1000, per_row
    index = next(r for r in rows if r["id"] == groups.gid(*pages.INDEX))
    page = next(r for r in space.derived.rows(pages.PAGE) if r["id"] == "wiki-index")
    total = np.frombuffer(index["sum"], dtype="<f8")
    # the page's vector is stored in half precision (storage/schema.py, DERIVED_FLOAT)
    assert np.allclose(total / np.linalg.norm(total), page["vector"], atol=1e-3)
    rt.close()


def _to_earlier_shape(space) -> dict[str, bytes]:
    """Rewrite the groups table as a store written before ``sum`` existed held it (every
    group with its sum); returns the pages' sums."""
    from trimem.strategies.wiki.wikiupdate import resum

    rows = stored(space).to_pylist()
    for r in rows:
        if not r["sum"]:
            g = groups.load(space, [(r["kind"], r["key"])])[(r["kind"], r["key"])]
            resum(space, g)
            r["sum"] = g.v.tobytes()
    dim = space.vector_dim
    old = pa.schema([("id", pa.string()), ("namespace", pa.string()), ("kind", pa.string()),
                     ("key", pa.string()), ("live", pa.bool_()), ("state", pa.string()),
                     ("vector", pa.list_(pa.float32(), dim))])
    out = []
    for r in rows:
        v = np.frombuffer(r["sum"], dtype="<f8")
        state = json.loads(r["state"])
        state["v"] = base64.b64encode(v.tobytes()).decode()
        out.append({"id": r["id"], "namespace": r["namespace"], "kind": r["kind"],
                    "key": r["key"], "live": r["live"], "state": json.dumps(state),
                    "vector": (v / (np.linalg.norm(v) or 1.0)).astype(np.float32).tolist()})
    name = space.name(store.GROUP)
    space.store.drop_table(name)
    space.store.db.create_table(name, data=pa.Table.from_pylist(out, schema=old))
    return {r["id"]: r["sum"] for r in rows if r["live"]}


def test_a_groups_table_of_the_earlier_shape_is_upgraded_and_curation_goes_on(home):
    rt = runtime(home)
    for s in WIKI_SESSIONS[:2]:
        say(rt, *s)
    sums = _to_earlier_shape(rt.space("default"))
    rt.close()

    rt = runtime(home)                 # a new process: upgrades on its first write
    space = rt.space("default")
    before = page_view(space)
    assert "vector" in stored(space).column_names
    groups.upgrade(space)
    data = stored(space)
    assert "vector" not in data.column_names and "sum" in data.column_names
    assert {r["id"]: r["sum"] for r in data.to_pylist() if r["live"]} == sums    # bit for bit
    assert all(r["sum"] == b"" for r in data.to_pylist() if not r["live"])
    assert page_view(space) == before
    say(rt, *WIKI_SESSIONS[2])
    incremental = page_view(space)
    assert "wiki-entity-kiln-studio" in incremental
    pages.rebuild(space)
    assert page_view(space) == incremental
    rt.close()


def test_an_earlier_shape_table_is_upgraded_by_the_next_curation(home):
    rt = runtime(home)
    for s in WIKI_SESSIONS[:2]:
        say(rt, *s)
    _to_earlier_shape(rt.space("default"))
    rt.close()

    rt = runtime(home)
    say(rt, *WIKI_SESSIONS[2])
    space = rt.space("default")
    assert "vector" not in stored(space).column_names
    incremental = page_view(space)
    pages.rebuild(space)
    assert page_view(space) == incremental
    rt.close()


def test_only_a_pages_group_keeps_its_sum_and_one_that_becomes_a_page_sums_again(home,
                                                                                monkeypatch):
    monkeypatch.setattr(groups, "SUM_TRAJS", -1)     # every page's group keeps its sum
    rt = runtime(home)
    space = rt.space("default")
    say(rt, *WIKI_SESSIONS[0])           # Rex is named once: a group, not yet a page
    rex = {r["id"]: r for r in stored(space).to_pylist()}[groups.gid("entity", "rex")]
    assert not rex["live"] and rex["sum"] == b""
    rows = stored(space).to_pylist()
    assert all((len(r["sum"]) == 8 * space.vector_dim) == r["live"] for r in rows)
    assert sum(not r["live"] for r in rows) >= len(rows) // 3
    for s in WIKI_SESSIONS[1:]:
        say(rt, *s)                       # named again: now a page
    rows = {r["id"]: r for r in stored(space).to_pylist()}
    assert rows[groups.gid("entity", "rex")]["live"]
    from trimem.strategies.wiki.wikiupdate import resum

    for r in rows.values():               # every page's sum is what summing afresh gives
        if r["live"]:
            g = groups.load(space, [(r["kind"], r["key"])])[(r["kind"], r["key"])]
            g.partial = True
            resum(space, g)
            assert g.v.tobytes() == r["sum"], r["id"]
    rt.close()


def exact_pages(space) -> dict:
    return {r["id"]: (r["title"], r["text"], r["trajectory_ids"], r["n_links"],
                      np.asarray(r["vector"], np.float32).tobytes()) for r in space.derived.rows(pages.PAGE)}


def _curated(home, keep_all_sums: int, monkeypatch) -> dict:
    """Curate WIKI_SESSIONS into ``home``, the first ``keep_all_sums`` as a version that kept
    every page's sum wrote them; the pages exactly."""
    default = groups.SUM_TRAJS
    for n, s in enumerate(WIKI_SESSIONS):
        monkeypatch.setattr(groups, "SUM_TRAJS", -1 if n < keep_all_sums else default)
        rt = runtime(home)                # a process per session: groups are read back
        say(rt, *s)
        rt.close()
    monkeypatch.setattr(groups, "SUM_TRAJS", default)
    rt = runtime(home)
    out = exact_pages(rt.space("default"))
    kept = {r["id"] for r in stored(rt.space("default")).to_pylist() if r["sum"]}
    rt.close()
    return {"pages": out, "kept": kept}


def test_a_small_pages_group_keeps_no_sum_and_its_page_vector_is_the_same_bit_for_bit(
        tmp_path, monkeypatch):
    every = _curated(tmp_path / "every", len(WIKI_SESSIONS), monkeypatch)   # all pages' sums
    fresh = _curated(tmp_path / "fresh", 0, monkeypatch)
    older = _curated(tmp_path / "older", 1, monkeypatch)   # a store written with every sum, then
    assert len(every["kept"]) > 5                          # updated by this version
    assert fresh["kept"] == {groups.gid(*pages.INDEX)}
    assert older["kept"] < every["kept"]    # what the later sessions wrote dropped its sum
    assert fresh["pages"] == every["pages"] == older["pages"]
    rt = runtime(tmp_path / "fresh")
    pages.rebuild(rt.space("default"))
    assert exact_pages(rt.space("default")) == every["pages"]
    rt.close()


def _snapshots_to_earlier_shape(space) -> dict[str, np.ndarray]:
    """Rewrite the snapshots table as a store that kept their vectors held it."""
    rows = [dict(s.as_dict(), namespace=s.namespace, vector=s.vector.tolist())
            for s in store.load_snapshots(space)]
    name = space.name(store.SNAP)
    old = store.SNAP_SCHEMA.append(pa.field("vector", pa.list_(pa.float32(), space.vector_dim)))
    space.store.drop_table(name)
    space.store.db.create_table(name, data=pa.Table.from_pylist(rows, schema=old))
    return {r["id"]: np.asarray(r["vector"], np.float32) for r in rows}


def test_a_snapshot_row_holds_no_vector_and_reads_the_one_it_was_made_with(home):
    rt = runtime(home)
    for s in WIKI_SESSIONS:
        say(rt, *s)
    space = rt.space("default")
    assert "vector" not in space.derived.table(store.SNAP).to_arrow().column_names
    assert space.name(store.SNAP).endswith(space.name("sources").rsplit("__", 1)[1])
    made = {}
    for sid, _, _ in WIKI_SESSIONS:
        rows = space.sources.by_session(sid)
        made.update({s.id: s.vector for s in claims.build_snapshots(
            sid, rows, space.sessions.time(sid), space.sources.vectors([r.id for r in rows]))})
    read = {s.id: s.vector for s in store.load_snapshots(space)}
    assert read.keys() == made.keys()
    assert all(read[i].dtype == np.float32 and read[i].tobytes() == made[i].tobytes() for i in read)
    rt.close()


def test_a_snapshots_table_of_the_earlier_shape_is_read_and_upgraded(home):
    rt = runtime(home)
    for s in WIKI_SESSIONS[:2]:
        say(rt, *s)
    kept = _snapshots_to_earlier_shape(rt.space("default"))
    rt.close()

    rt = runtime(home)
    space = rt.space("default")
    read = {s.id: s.vector for s in store.load_snapshots(space)}
    assert {i: v.tobytes() for i, v in read.items()} == {i: v.tobytes() for i, v in kept.items()}
    before = page_view(space)
    say(rt, *WIKI_SESSIONS[2])
    assert "vector" not in space.derived.table(store.SNAP).to_arrow().column_names
    after = page_view(space)
    for pid in ("wiki-entity-rex", "wiki-entity-berlin", "wiki-entity-ana"):   # not in s3
        assert after[pid] == before[pid], pid
    pages.rebuild(space)
    assert page_view(space) == after
    rt.close()


def test_a_trajectory_state_holds_no_vectors_and_a_new_process_adds_them_up_the_same(home):
    from trimem.strategies.wiki import curate

    rt = runtime(home)
    for s in WIKI_SESSIONS[:2]:
        say(rt, *s)
    space = rt.space("default")
    rows = space.derived.rows(store.TRAJ)
    assert rows and not any({"head", "last", "sum"} & set(json.loads(r["state"])) for r in rows)
    rt.close()
    rt = runtime(home)                        # a new process loads the open trajectories
    _, loaded, _ = curate.load_index(rt.space("default"))
    for r in rows:     # the stored vector is the sum curation held, normalised when written
        T = loaded[r["id"]]        # (and stored in half precision: storage/schema.py)
        assert T.sum is not None and T.head is not None
        assert (T.sum / (np.linalg.norm(T.sum) or 1.0)).astype(np.float32).astype(np.float16) \
            .tobytes() == np.asarray(r["vector"], np.float16).tobytes(), r["id"]
    say(rt, *WIKI_SESSIONS[2])
    space = rt.space("default")
    incremental = page_view(space)
    pages.rebuild(space)
    assert page_view(space) == incremental
    rt.close()


def _trajectories(space) -> list[dict]:
    return sorted(({k: v for k, v in r.items() if k != "text"} for r in space.derived.rows(store.TRAJ)),
                  key=lambda r: r["id"])


def test_a_trajectories_table_with_its_snapshots_text_is_upgraded_and_curation_goes_on(
        tmp_path):
    """A store whose trajectory rows kept their snapshots' text (an earlier version's): read as
    before, rewritten without it at the next curation, and then the same rows and pages as a
    store that never had it."""
    rt = runtime(tmp_path / "earlier")
    for s in WIKI_SESSIONS[:2]:
        say(rt, *s)
    space = rt.space("default")
    rows = space.derived.rows(store.TRAJ)
    texts = {s.id: s.text for s in store.load_snapshots(space)}
    for r in rows:
        r["text"] = "\n".join(texts[i] for i in r["snapshot_ids"])
    old = store.TRAJ_SCHEMA.insert(3, pa.field("text", pa.string()))
    old = old.set(old.get_field_index("vector"),
                  pa.field("vector", pa.list_(pa.float32(), space.vector_dim)))
    name = space.name(store.TRAJ)
    space.store.drop_table(name)
    space.store.db.create_table(name, data=pa.Table.from_pylist(rows, schema=old))
    rt.close()

    rt = runtime(tmp_path / "earlier")
    space = rt.space("default")
    assert "text" in space.derived.table(store.TRAJ).to_arrow().column_names
    before = page_view(space)
    say(rt, *WIKI_SESSIONS[2])
    assert "text" not in space.derived.table(store.TRAJ).to_arrow().column_names
    after, upgraded = exact_pages(space), _trajectories(space)
    assert all(after[p][:4] == before[p][:4] for p in ("wiki-entity-rex", "wiki-entity-berlin"))
    rt.close()

    rt = runtime(tmp_path / "never")
    for s in WIKI_SESSIONS:
        say(rt, *s)
    assert _trajectories(rt.space("default")) == upgraded
    assert exact_pages(rt.space("default")) == after
    rt.close()


def test_the_wiki_tables_bytes_per_stored_turn_stay_under_bounds(home):
    """The live rows of the three tables these shapes shrank, per stored turn, on the small
    store (2026-12-06: groups 33,608 -> 11,346, snapshots 1,559 -> 681, trajectories 4,974 ->
    1,443 bytes; pages 5,212 and claims 427 as they were; then groups 11,346 -> 3,446 when
    only the index's and large pages' groups kept their sums)."""
    from trimem.bench.disk import live_columns

    rt = runtime(home)
    for s in WIKI_SESSIONS:
        say(rt, *s)
    rt.close()
    per_turn = {k: v["bytes_per_turn"] for k, v in live_columns(home).items()}
    assert per_turn["wiki_groups"] < 5_000, per_turn
    assert per_turn["wiki_snapshots"] < 1_000, per_turn
    assert per_turn["wiki_trajectories"] < 2_500, per_turn
    cols = live_columns(home)
    assert "vector" not in cols["wiki_groups"]["columns"]
    assert "vector" not in cols["wiki_snapshots"]["columns"]
    assert "text" not in cols["wiki_trajectories"]["columns"]   # its snapshots' text


def test_summing_a_group_again_computes_vectors_only_for_the_snapshots_about_it(home,
                                                                                 monkeypatch):
    from trimem.strategies.wiki.wikiupdate import resum

    from trimem.bench.synth import Synth

    rt = runtime(home)
    made = Synth(seed=3).sessions()
    for _ in range(5):                    # trajectories of several snapshots, not all about one group
        sid, when, msgs = next(made)
        say(rt, sid, when, [(m["speaker"], m["content"]) for m in msgs])
    space = rt.space("default")
    checked = 0
    for r in stored(space).to_pylist():
        if not r["live"] or r["kind"] == "index":
            continue
        key = (r["kind"], r["key"])
        g = groups.load(space, [key])[key]
        snaps = store.load_snapshots(space, [i for t in store.trajectories(
            space, eq={"id": sorted(g.trajs)}) for i in t.snapshot_ids])
        about = sorted((s for s in snaps if key in pages.snap_keys(s)), key=store.order_key)
        expected = np.zeros(space.vector_dim)
        for s in about:                   # every snapshot of its trajectories read, as before
            expected += np.asarray(s.vector, dtype=np.float64)
        asked: list[str] = []
        real = space.sources.vectors
        monkeypatch.setattr(space.sources, "vectors",
                            lambda ids, asked=asked, real=real: (asked.extend(ids), real(ids))[1])
        g.partial = True
        resum(space, g)
        monkeypatch.undo()
        assert g.v.tobytes() == expected.tobytes(), key
        assert set(asked) == {i for s in about for i in s.source_ids}, key
        checked += len(about) < len(snaps)    # a group some of its trajectories' snapshots skip
    assert checked >= 3
    rt.close()


def test_a_curated_session_reads_the_index_group_once(home, monkeypatch):
    """Its state holds the page directory and every trajectory id (hundreds of KB at 30,000
    turns): curation reads it to learn whether the pages are in step, and updates that same
    group rather than reading it again. The pages are the ones a rebuild from scratch gives."""
    rt = runtime(home)
    space = rt.space("default")
    index_id = groups.gid(*pages.INDEX)
    reads: list[int] = []
    real = space.derived.rows

    def counted(kind, *a, **kw):
        reads[-1] += kind == store.GROUP and index_id in (kw.get("eq") or {}).get("id", ())
        return real(kind, *a, **kw)

    monkeypatch.setattr(space.derived, "rows", counted)
    for s in WIKI_SESSIONS:
        reads.append(0)
        say(rt, *s)
    assert reads == [1] * len(WIKI_SESSIONS)
    incremental = page_view(space)
    assert len(incremental) > 5
    pages.rebuild(space)
    assert page_view(space) == incremental
    rt.close()
