"""A live session is curated again after each exchange: hybrid embeds only the episode and fact
texts it has no vector for yet (those of the session's earlier curation are taken back), and
the memories come out bit for bit as when the whole session is curated once (real LanceDB in a
temp folder, the real embedder)."""

from __future__ import annotations

import numpy as np

from trimem.server.settings import Settings
from trimem.strategies.hybrid import store
from trimem.strategies.hybrid.strategy import HybridStrategy
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

from .conftest import SESSIONS

LINES = [line for _, _, lines in SESSIONS for line in lines]


def runtime(home) -> Runtime:
    return Runtime(Settings(home=str(home), curation=False).to_config())


def said(lines, start: int) -> list[Message]:
    return [Message(content=text, speaker=who, ref=f"m{start + k}")
            for k, (who, text) in enumerate(lines)]


def memories(rt: Runtime) -> list[tuple]:
    rows = store.session_rows(rt.space("default"), "live", vectors=True)
    return sorted((r.id, r.text, r.status, np.asarray(r.vector, np.float32).tobytes())
                  for r in rows)


def test_a_growing_session_embeds_only_new_texts_and_ends_as_one_curation(tmp_path, monkeypatch):
    embedded: list[str] = []
    real = store.write

    def counted(env, rows, replacing=None, known=None):
        embedded.extend(sorted({r.text for r in rows} - set(known or {})))
        return real(env, rows, replacing, known)

    monkeypatch.setattr(store, "write", counted)
    rt = runtime(tmp_path / "live")
    again = 0   # what embedding every text of each curation again would take
    try:
        for k in range(0, len(LINES), 2):   # one exchange at a time, curated after each
            remember(rt, said(LINES[k:k + 2], k), session_id="live", namespace="default")
            before = len(embedded)
            HybridStrategy().curate(rt.env("default"), "live")
            made = {r[1] for r in memories(rt)}
            again += len(made)
            assert len(embedded) - before < len(made) or k == 0   # not every text again
        live = memories(rt)
    finally:
        rt.close(30)
    rt = runtime(tmp_path / "once")
    try:
        remember(rt, said(LINES, 0), session_id="live", namespace="default")
        HybridStrategy().curate(rt.env("default"), "live")
        once = memories(rt)
    finally:
        rt.close(30)
    assert len(live) > 5
    assert live == once
    assert len(embedded) < 0.7 * again   # 38 of 66 here: a growing episode is embedded again
