"""A namespace's first index build does not stall recalls in other namespaces.

The first ``remember`` in a namespace builds its sources' FTS and B-tree indexes (seconds on a
large table). The build is made to last until the test releases it (the real LanceDB build then
runs); meanwhile a recall in another namespace must answer. It used to wait: the build held
``Store.lock``, which every table look-up of every namespace takes.
"""

from __future__ import annotations

import threading

from trimem.server.settings import Settings
from trimem.storage import sources
from trimem.tools.recall import recall
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime


def test_a_recall_in_b_proceeds_while_a_builds_its_indexes(tmp_path, monkeypatch):
    rt = Runtime(Settings(home=str(tmp_path / "home"), curation=False).to_config())
    try:
        remember(rt, [Message(content="Our team ships the harbour release on Friday.",
                              speaker="Ana", ref="b1")], session_id="s", namespace="b")
        assert recall(rt, "harbour release", strategy="plain", namespace="b").sources

        building, release = threading.Event(), threading.Event()
        real = sources.ensure_index

        def slow_build(tbl, column, config, *a, **kw):
            if "ns_a_" in tbl.name:   # namespace "a" only: its build lasts until released
                building.set()
                release.wait(60)
            return real(tbl, column, config, *a, **kw)

        monkeypatch.setattr(sources, "ensure_index", slow_build)
        writer = threading.Thread(target=remember, args=(rt, [Message(
            content="The kiln in the studio reaches 1200 degrees.", speaker="Cara", ref="a1")]),
            kwargs={"session_id": "s", "namespace": "a"})
        writer.start()
        assert building.wait(60), "namespace a never started building its indexes"

        got: list = []
        reader = threading.Thread(target=lambda: got.append(
            recall(rt, "harbour release", strategy="plain", namespace="b")))
        reader.start()
        reader.join(20)
        stalled = reader.is_alive()
        release.set()
        writer.join(60)
        reader.join(60)
        assert not stalled, "a recall in namespace b waited for namespace a's index build"
        assert got and {s.ref for s in got[0].sources} == {"b1"}
        assert recall(rt, "kiln studio", strategy="plain", namespace="a").sources
    finally:
        rt.close()
