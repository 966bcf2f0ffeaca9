"""The ``SessionStart`` memory of a project (``capture.digest.build``): the latest sessions with
their first and last request, then the older sessions by their opening request while the budget
lasts, all inside the memory frame and within the budget."""

from __future__ import annotations

import pytest

from trimem.capture.digest import RECENT, build
from trimem.server.settings import Settings
from trimem.strategies import frame
from trimem.tools.remember import Message, remember
from trimem.tools.runtime import Runtime

N = RECENT + 4


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    rt = Runtime(Settings(home=str(tmp_path_factory.mktemp("home")), curation=False).to_config())
    for k in range(N):
        remember(rt, [Message(content=f"Opening request of session {k}: rename module m{k}.", speaker="user"),
                      Message(content=f"Renamed m{k}.", speaker="assistant"),
                      Message(content=f"Closing request of session {k}: run the tests.", speaker="user")],
                 session_id=f"s{k}", session_time=f"2026-02-{k + 1:02d}T10:00:00")
    yield rt
    rt.close()


def test_latest_sessions_then_earlier_ones_within_the_budget(rt):
    text = build(rt, "default", 800)
    assert len(text) <= 800 * 4
    assert text.count(frame.OPEN) == 1 and text.rstrip().endswith(frame.CLOSE)
    latest, _, earlier = text.partition("Earlier sessions:")
    for k in range(N - RECENT, N):          # the latest: first and last request
        assert f"Opening request of session {k}:" in latest
        assert f"Closing request of session {k}:" in latest
    for k in range(N - RECENT):             # the older ones: their opening request, newest first
        assert f"Opening request of session {k}:" in earlier
        assert f"Closing request of session {k}:" not in earlier
    assert earlier.index("session 1:") < earlier.index("session 0:")


def test_a_small_budget_keeps_the_newest_and_stops(rt):
    text = build(rt, "default", 120)
    assert len(text) <= 120 * 4
    assert f"Opening request of session {N - 1}:" in text
    assert "Earlier sessions:" not in text
