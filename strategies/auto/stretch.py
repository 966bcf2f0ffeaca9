"""Evidence comes in stretches: a turn among other well-ranked turns nearby gains.

What answers a question is usually talked about for a while: the turns around an evidence turn
are on its topic, and the voters rank several of them. A turn ranked alone, far from any other,
is more often a chance match. Passage retrieval combines a passage's own score with its
document's for this reason (Callan, "Passage-level evidence in document retrieval", SIGIR
1994); a chat has no documents, so the "document" here is the stretch of conversation around the
turn: after fusion (and the named speakers' weight), each turn's score gains ``LIFT`` x the sum
of the ``TOP`` best fused scores among the turns of its session within ``WINDOW`` positions of
it (its own included). The order of turns in the context does not change (``render``); only
which turns make the budget.

``WINDOW`` = 20 and ``LIFT`` = 0.1 were chosen together on both development sets at 2,000
tokens, among windows 10 / 20 / 30 / the whole session and lifts 0.05 / 0.1 / 0.15, with each
conversation left out in turn (all ten folds pick 20 / 0.1; bench/README.md, "What is
in-sample"). ``TOP`` = 3 was not varied. On LoCoMo it gains about a point; on the real chats of
REALTALK, whose sessions are whole days of mixed topics, it changes almost nothing.
"""

from __future__ import annotations

from collections import defaultdict
from ...storage.rows import Source

WINDOW = 20
LIFT = 0.1
TOP = 3
Fused = list[tuple[str, float, dict]]


def lift_stretches(fused: Fused, rows: dict[str, Source],
                   lift: float = LIFT, window: int = WINDOW) -> tuple[Fused, dict[str, float]]:
    """``fused`` (id, score, ranks) with each score raised by its stretch (see the module),
    best first again (ties keep their order), and each turn's raise. ``rows``: the fused turns'
    rows by id (``session_id``, ``seq``), read once per recall by ``auto``."""
    if lift <= 0 or not fused:
        return fused, {}
    where = {i: (r.session_id, int(r.seq)) for i, r in rows.items()}
    by_session: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, s, _ in fused:
        if i in where:
            sid, seq = where[i]
            by_session[sid].append((seq, s))
    raised: dict[str, float] = {}
    for i, _, _ in fused:
        if i not in where:
            continue
        sid, seq = where[i]
        near = sorted((s for p, s in by_session[sid] if abs(p - seq) <= window), reverse=True)
        raised[i] = lift * sum(near[:TOP])
    out = [(i, s + raised.get(i, 0.0), r) for i, s, r in fused]
    return sorted(out, key=lambda x: -x[1]), raised
