"""The small pages' sums a curating process keeps (``groups.SumCache``): real LanceDB in a temp
folder, the real embedder. A page whose group is stored without its vector sum is summed again
from its snapshots when it is next written (``wikiupdate.resum``); the process that wrote it
takes the sum it kept instead, and the pages come out bit for bit as when every session is
curated by a new process (which keeps nothing) and as a rebuild from scratch gives them."""

from datetime import datetime

import numpy as np

from trimem.bench.synth import Synth
from trimem.server.app import build_server
from trimem.server.settings import Settings
from trimem.strategies.wiki import groups, pages, wikiupdate
from trimem.strategies.wiki.curate import state_of
from trimem.strategies.wiki.store import Snapshot
from trimem.strategies.wiki.strategy import WikiStrategy
from trimem.tools.remember import Message, remember

N_SESSIONS = 8


def sessions() -> list[tuple[str, str, list]]:
    made = Synth(seed=5).sessions()
    return [next(made) for _ in range(N_SESSIONS)]


def runtime(home):
    return build_server(Settings(home=str(home), curation=False)).runtime


def say(rt, sid, when, msgs) -> None:
    turns = [Message(content=m["content"], speaker=m["speaker"], ref=f"{sid}-{i}")
             for i, m in enumerate(msgs)]
    remember(rt, turns, session_id=sid, session_time=when, namespace="default")
    with rt.curating("default"):   # as the worker curates: in the namespace's curation turn
        WikiStrategy().curate(rt.env("default"), sid)


def exact_pages(space) -> dict:
    return {r["id"]: (r["title"], r["text"], r["trajectory_ids"], r["n_links"],
                      np.asarray(r["vector"], np.float32).tobytes())
            for r in space.derived.rows(pages.PAGE)}


def counted_resums(monkeypatch) -> list[int]:
    summed = [0]
    real = wikiupdate.resum

    def resum(space, *gs):
        summed[0] += len(gs)
        return real(space, *gs)

    monkeypatch.setattr(wikiupdate, "resum", resum)
    return summed


def test_one_process_takes_the_sums_it_kept_and_writes_the_same_pages(tmp_path, monkeypatch):
    made = sessions()
    summed = counted_resums(monkeypatch)
    for s in made:                         # a new process per session: nothing kept
        rt = runtime(tmp_path / "each")
        say(rt, *s)
        rt.close()
    each_summed = summed[0]
    rt = runtime(tmp_path / "each")
    each = exact_pages(rt.space("default"))
    rt.close()

    summed[0] = 0
    rt = runtime(tmp_path / "one")         # one process curates them all
    for s in made:
        say(rt, *s)
    one = exact_pages(rt.space("default"))
    assert len(state_of(rt.env("default").ns).sums._sums) > 0
    pages.rebuild(rt.space("default"))
    rebuilt = exact_pages(rt.space("default"))
    rt.close()
    assert len(each) > 10
    assert one == each == rebuilt
    assert summed[0] < each_summed // 2, (summed[0], each_summed)


def test_a_write_by_another_process_is_summed_again(tmp_path, monkeypatch):
    """Two processes curating sessions in turn, back to back: each one's kept sums miss after
    the other's write, and the pages equal those of a process per session. No pause for
    LanceDB's read-consistency interval: a turn taken after the other process's sees its writes
    (``Runtime.curating``), and so does the final read, made in a turn of its own."""
    made = sessions()
    for s in made:
        rt = runtime(tmp_path / "each")
        say(rt, *s)
        rt.close()
    rt = runtime(tmp_path / "each")
    each = exact_pages(rt.space("default"))
    rt.close()

    a, b = runtime(tmp_path / "two"), runtime(tmp_path / "two")
    for n, s in enumerate(made):
        say(a if n % 2 == 0 else b, *s)
    with a.curating("default") as turn:   # b curated last
        assert turn.moved
        got = exact_pages(a.space("default"))
    a.close()
    b.close()
    assert got == each


def test_adding_a_snapshot_changes_a_groups_stored_state():
    """Within its time span and from a trajectory it already links, a snapshot changes nothing
    else of the state: the count does, so a sum kept for the state before cannot be taken."""
    g = groups.Group("entity", "kiwi", dim=4)
    when = "2023-01-10T10:00:00+00:00"

    def snap(i: str) -> Snapshot:
        return Snapshot(id=i, session_id="s", idx=0, timestamp=datetime.fromisoformat(when),
                        vector=np.ones(4, np.float32))

    g.link("t1")
    g.add_snapshot(snap("a"))
    before = g.row(True)
    g.add_snapshot(snap("b"))
    after = g.row(True)
    assert before.state != after.state
    cache = groups.SumCache()
    cache.put(before, g.v)
    assert cache.get(after) is None and cache.get(before) is not None
