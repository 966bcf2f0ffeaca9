"""The checker of ``s3_procs.py``: after every worker exited, a fresh runtime reads each namespace
of the bucket and compares it with what the workers were told was stored.

Counted (each should be 0): ``lost`` (an acknowledged message not stored), ``doubled`` (stored
more than once), ``wrong_id`` (stored under another id than acknowledged), ``leaked`` (a message
in a namespace it was not written to), ``extra`` (a row nobody wrote), ``seq_twins`` (two
messages of one session at one position), ``seq_gaps`` (positions not 0..n-1), ``out_of_order``
(a worker's messages in a session not in the order it wrote them), ``n_messages_off`` (a
session row whose message count is not what the session holds), ``session_rows_doubled``
(a session with more than one row), ``namespaces_off`` (the
namespace list not exactly the namespaces written, each once). With ``curation``:
``uncurated`` (a session not marked curated) and ``derived_leaked`` (a derived row of a
worker's own namespace quoting another worker's message).
"""

from __future__ import annotations

from collections import Counter, defaultdict


def check(home: str, reports: list[dict], names: list[str], curation: bool = False) -> dict:
    from ..server.settings import Settings
    from ..tools.runtime import Runtime

    expect: dict[str, dict[str, str]] = defaultdict(dict)    # ns -> ref -> acknowledged id
    written: dict[tuple[str, str], list[str]] = defaultdict(list)   # (ns, sid) -> refs, in order
    for r in reports:
        for a in r["acks"]:
            expect[a["ns"]].update(zip(a["refs"], a["ids"]))
            written[(a["ns"], a["sid"])] += a["refs"]
    owner = {ref: ns for ns, refs in expect.items() for ref in refs}
    out = Counter({k: 0 for k in ("lost", "doubled", "wrong_id", "leaked", "extra", "seq_twins",
                                  "seq_gaps", "out_of_order", "n_messages_off",
                                  "session_rows_doubled", "namespaces_off")}
                  | ({"uncurated": 0, "derived_leaked": 0} if curation else {}))
    detail: list[str] = []
    rt = Runtime(Settings(home=home, curation=False).to_config())
    try:
        registry = rt.store.open_table("_namespaces")    # its rows, as stored
        listed = sorted(r["name"] for r in registry.search().limit(None).to_list())
        if listed != sorted(expect):
            out["namespaces_off"] += 1
            detail.append(f"namespaces registered {listed}, written {sorted(expect)}")
        for ns, refs in expect.items():
            space = rt.space(ns)
            rows = space.sources.all()
            count = Counter(r.ref for r in rows)
            for ref in refs:
                if count[ref] == 0:
                    out["lost"] += 1
                    detail.append(f"lost {ns}/{ref}")
                elif count[ref] > 1:
                    out["doubled"] += count[ref] - 1
                    detail.append(f"doubled {ns}/{ref} x{count[ref]}")
            for r in rows:
                if r.ref in refs:
                    if r.id != refs[r.ref]:
                        out["wrong_id"] += 1
                    if r.namespace != ns:
                        out["leaked"] += 1
                elif r.ref in owner:
                    out["leaked"] += 1
                    detail.append(f"leaked {owner[r.ref]}/{r.ref} into {ns}")
                else:
                    out["extra"] += 1
                    detail.append(f"extra {ns}/{r.ref}")
            _sessions(space, ns, rows, written, out, detail)
            if curation:
                _curated(rt, space, ns, names, out, detail)
    finally:
        rt.close()
    return dict(out) | {"messages": sum(len(v) for v in expect.values()), "detail": detail[:40]}


def _sessions(space, ns: str, rows: list, written: dict, out: Counter, detail: list[str]) -> None:
    """Positions in each session: unique, 0..n-1, each writer's messages in its order; the
    session row's count."""
    listed = Counter(s.session_id for s in space.sessions.all())
    for sid, n in listed.items():
        if n > 1:
            out["session_rows_doubled"] += n - 1
            detail.append(f"{ns}/{sid}: {n} session rows")
    by_sid = defaultdict(list)
    for r in rows:
        by_sid[r.session_id].append(r)
    for sid, got in by_sid.items():
        seqs = sorted(r.seq for r in got)
        twins = len(seqs) - len(set(seqs))
        if twins:
            out["seq_twins"] += twins
            detail.append(f"{ns}/{sid}: {twins} positions held by two messages")
        if sorted(set(seqs)) != list(range(len(set(seqs)))) or max(seqs) != len(seqs) - 1:
            out["seq_gaps"] += 1
            detail.append(f"{ns}/{sid}: positions {seqs[:3]}..{seqs[-3:]} for {len(seqs)} messages")
        pos = {r.ref: (r.seq, r.created_at) for r in got}
        for writer in {ref.split(".")[0] for ref in pos if ref}:
            order = [ref for ref in written.get((ns, sid), []) if ref.startswith(f"{writer}.")]
            if sorted(order, key=lambda ref: pos.get(ref, (-1, None))[0]) != order:
                out["out_of_order"] += 1
                detail.append(f"{ns}/{sid}: {writer}'s messages not in its order")
        session = space.sessions.get(sid)
        if session is None or session.n_messages != len(got):
            out["n_messages_off"] += 1
            detail.append(f"{ns}/{sid}: session row says "
                          f"{session.n_messages if session else None}, holds {len(got)}")


def _curated(rt, space, ns: str, names: list[str], out: Counter, detail: list[str]) -> None:
    """Every session curated; no derived row of a worker's own namespace quoting another's
    message (each message carries its writer's marker, ``s3_procs.marker``)."""
    for sid in space.sessions.uncurated():
        out["uncurated"] += 1
        detail.append(f"{ns}/{sid}: not curated")
    owner = ns.removeprefix("own-") if ns.startswith("own-") else None
    if owner is None:
        return
    others = [f"zz{n}x" for n in names if n != owner]
    for name in rt.store.table_names():
        if not name.startswith(f"ns_{space.key}__") or "__sources" in name:
            continue
        for row in rt.store.open_table(name).to_arrow().to_pylist():
            text = " ".join(str(v) for v in row.values() if isinstance(v, str))
            if any(o in text for o in others):
                out["derived_leaked"] += 1
                detail.append(f"{name}: a row quotes another worker's message")
