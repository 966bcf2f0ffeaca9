"""Fuzzing every importer (``trimem import --from trimem|memory-json|chatgpt|claude``) with
hypothesis: files that are nearly of their kind (so the fuzzing reaches the mapping, the checks
and the write), with hostile strings, odd types, loops, extreme numbers, deep nesting, cut or
corrupted bytes. Each file goes through what the command runs (``transfer.read_file``, then
``import_records`` into one real home), and for every file:

- no crash: the only exception is ``FileRefused`` (the command's exit status 1 and report);
- no hang: answered within ``BOUND_S`` seconds (reading, checking and writing a file of at most
  a few hundred kilobytes into a real LanceDB with the real embedder);
- no partial import: a refused file changes nothing; an imported one changes exactly what its
  report says (messages, curated memories, forget records), every message of the file is
  accounted for (stored, already stored, forgotten or refused), and importing it again adds
  nothing (every session it wrote is whole).

The normal suite runs ``EXAMPLES`` files per format (a few seconds each); the slow-marked run
``SLOW_EXAMPLES`` (``TRIMEM_FUZZ_EXAMPLES`` sets it: a longer run is a benchmark, not the
suite's job). ``print_figures`` prints what was tried (``pytest -s``).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest
from fuzzing import FUZZ, answered, mutated, text, words
from hypothesis import given, settings, strategies as st

from trimem.server.settings import Settings
from trimem.tools.runtime import Runtime
from trimem.transfer import KINDS, read_file
from trimem.transfer.bounds import Bounds, Deadline, FileRefused, Refusals
from trimem.transfer.importer import import_records

EXAMPLES, SLOW_EXAMPLES = 25, int(os.environ.get("TRIMEM_FUZZ_EXAMPLES", "200"))
FIGURES: dict[str, dict] = defaultdict(lambda: {"cases": 0, "refused_whole": 0, "imported": 0,
                                               "messages_read": 0, "messages_stored": 0,
                                               "messages_refused": 0,
                                               "crashes": 0, "hangs": 0, "partial": 0,
                                               "max_s": 0.0})
NAMESPACES = ["fa", "fb"]

time_iso = st.one_of(st.sampled_from(["2024-05-08T10:00:00Z", "2024-05-08", "2024-05-09T11:00:00+02:00"]),
                     st.sampled_from(["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00",
                                      "yesterday", ""]), text)


# -- files valid by construction ... ---------------------------------------------------------
@st.composite
def chatgpt_file(draw):
    convs = []
    for c in range(draw(st.integers(1, 3))):
        n = draw(st.integers(1, 6))
        mapping = {"root": {"id": "root", "parent": None, "children": ["n0"], "message": None}}
        for i in range(n):
            nid = f"n{i}"
            mapping[nid] = {"id": nid, "parent": "root" if i == 0 else f"n{i - 1}",
                            "children": [f"n{i + 1}"] if i < n - 1 else [],
                            "message": {"id": nid, "author": {"role": draw(st.sampled_from(
                                ["user", "assistant", "assistant", "user", "system"]))},
                                "content": {"content_type": "text", "parts": [draw(words)]},
                                "create_time": draw(st.floats(1e9, 2e9) | st.none())}}
        if draw(st.booleans()):     # a regenerated answer on another branch
            mapping["alt"] = {"id": "alt", "parent": "n0", "children": [], "message": {
                "id": "alt", "author": {"role": "assistant"}, "content": {"parts": ["other"]}}}
            mapping["n0"]["children"].append("alt")
        conv = {"conversation_id": f"c{c}-{draw(st.integers(0, 3))}", "title": draw(words),
                "create_time": draw(st.floats(1e9, 2e9)), "mapping": mapping}
        if draw(st.booleans()):
            conv["current_node"] = f"n{n - 1}"
        convs.append(conv)
    return convs


@st.composite
def claude_file(draw):
    return [{"uuid": f"u{c}-{draw(st.integers(0, 3))}", "name": draw(words),
             "created_at": draw(time_iso),
             "chat_messages": [{"uuid": f"m{c}-{j}", "sender": ("human", "assistant")[j % 2],
                                "text": draw(words), "created_at": "2024-06-02T09:15:10Z"}
                               for j in range(draw(st.integers(1, 5)))]}
            for c in range(draw(st.integers(1, 3)))]


@st.composite
def memory_json_lines(draw):
    names = draw(st.lists(st.sampled_from(["Ana", "Ben", "Cara", "Dev", "Eve"]), min_size=1,
                          max_size=4, unique=True))
    rows: list = [{"type": "entity", "name": n, "entityType": "person",
                   "observations": draw(st.lists(words, max_size=3))} for n in names]
    rows += [{"type": "relation", "from": draw(st.sampled_from(names)),
              "to": draw(st.sampled_from(names)), "relationType": draw(words)}
             for _ in range(draw(st.integers(0, 3)))]
    return rows


@st.composite
def trimem_lines(draw):
    records: list = []
    refs: list[tuple[str, str, str]] = []
    for k in range(draw(st.integers(1, 3))):
        ns, sid = draw(st.sampled_from(NAMESPACES)), f"s{k}-{draw(st.integers(0, 2))}"
        records.append({"type": "session", "namespace": ns, "session_id": sid,
                        "session_time": draw(st.sampled_from(["2024-05-08T10:00:00Z", None]))})
        for j in range(draw(st.integers(1, 4))):
            rec = {"type": "message", "namespace": ns, "session_id": sid, "seq": j,
                   "content": draw(words), "speaker": "Ana"}
            if draw(st.integers(0, 3)):
                rec["ref"] = f"m{k}-{j}"
                refs.append((ns, sid, rec["ref"]))
            else:
                rec["id"] = f"src_{draw(st.integers(0, 10**6)):020x}"
            records.append(rec)
        mine = [r for n, s_, r in refs if n == ns]
        if mine and draw(st.booleans()):
            records.append({"type": "curated", "namespace": ns, "session_id": sid, "kind": "fact",
                            "subject": "Ana", "relation": draw(words), "object": draw(words),
                            "refs": draw(st.lists(st.sampled_from(mine), min_size=1, max_size=2,
                                                  unique=True))})
    if draw(st.booleans()):
        records.append({"type": "forget", "namespace": draw(st.sampled_from(NAMESPACES)),
                        "ids": [f"src_{draw(st.integers(0, 10**6)):020x}"], "refs": []})
    end = {"type": "end", "records": len(records)}
    return [{"format": "trimem-export", "version": 2}, *records, end]


def to_bytes(kind: str, data) -> bytes:
    if kind in ("trimem", "memory-json"):
        data = data if isinstance(data, list) else [data]
        return "\n".join(json.dumps(x) for x in data).encode("utf-8", "surrogatepass") + b"\n"
    return json.dumps(data).encode("utf-8", "surrogatepass")


@st.composite
def damaged(draw, kind: str, files):
    """A file of ``kind``: intact mostly, else cut short, with bytes changed or not UTF-8."""
    raw = to_bytes(kind, draw(files))
    how = draw(st.sampled_from(["intact"] * 6 + ["cut", "bytes", "latin1", "bignum", "deep"]))
    if how == "cut" and raw:
        raw = raw[:draw(st.integers(0, len(raw) - 1))]
    elif how == "bytes" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at + 1:]
    elif how == "latin1":
        raw += "é".encode("latin-1")
    elif how == "deep":     # past what Python's json can nest (it raises RecursionError)
        lines = raw.split(b"\n")
        at = draw(st.integers(0, len(lines) - 1))
        lines[at] = b"[" * 3_000 + lines[at] + b"]" * 3_000
        raw = b"\n".join(lines)
    elif how == "bignum":   # past Python's 4,300 digits for int(): json.dumps cannot write it
        raw = raw.replace(b"null", b"1" * 5_000, 1).replace(b"[]", b"[" + b"9" * 5_000 + b"]", 1)
    return raw


FILES = {"trimem": mutated(trimem_lines()), "memory-json": mutated(memory_json_lines()),
         "chatgpt": mutated(chatgpt_file()), "claude": mutated(claude_file())}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    rt = Runtime(Settings(home=str(tmp_path_factory.mktemp("fuzz") / "home"),
                          curation=False).to_config())
    yield rt, tmp_path_factory.mktemp("files")
    rt.close()


def state(rt) -> dict:
    """Totals over every namespace: messages, host-curated memories, forget records."""
    out = {"sources": 0, "curated": 0, "forgets": 0}
    for ns in rt.store.namespaces():
        sp = rt.space(ns)
        out["sources"] += sp.sources.count()
        out["curated"] += sum(m.origin == "host" for k in ("episode", "fact")
                              for m in sp.memories.of_kind(k, None))
        out["forgets"] += len(sp.derived.rows("audit", eq={"op": "forget"}, columns=["target_ids"]))
    return out


def attempt(rt, kind: str, path, namespace):
    """Read and import like the command; (report or None, refusals, messages read)."""
    refused = Refusals()
    deadline = Deadline(Bounds().timeout_s)
    try:
        records = read_file(kind, path, namespace, Bounds(), refused, deadline)
        read_refused = refused.messages
        report = import_records(rt, records, strict=kind == "trimem", refused=refused,
                                deadline=deadline)
    except FileRefused:
        return None, refused, 0, 0
    return report, refused, sum(r.type == "message" for r in records), read_refused


def check(home, kind: str, raw: bytes) -> None:
    rt, folder = home
    fig = FIGURES[kind]
    fig["cases"] += 1
    path = folder / f"{kind}-{fig['cases']}.json"
    path.write_bytes(raw)
    namespace = None if kind == "trimem" else NAMESPACES[fig["cases"] % 2]
    before = state(rt)
    report, refused, n_messages, read_refused = answered(fig, kind, path, lambda: attempt(rt, kind, path, namespace))
    after = state(rt)
    if report is None:
        fig["refused_whole"] += 1
        if after != before:
            fig["partial"] += 1
        assert after == before, f"{kind}: a refused file changed the home ({path})"
        path.unlink()
        return
    fig["imported"] += 1
    fig["messages_read"] += n_messages
    fig["messages_stored"] += report.messages_stored
    fig["messages_refused"] += report.messages_refused
    delta = {k: after[k] - before[k] for k in after}
    accounted = (report.messages_stored + report.messages_already_stored
                 + report.messages_forgotten + refused.messages - read_refused)
    said = {"sources": report.messages_stored, "curated": report.curated_stored,
            "forgets": report.forget_records_added}
    if delta != said or accounted != n_messages:
        fig["partial"] += 1
    assert delta == said, f"{kind}: the home changed by {delta}, the report says {said} ({path})"
    assert accounted == n_messages, f"{kind}: {n_messages} messages read, {accounted} accounted"
    again, _, _, _ = attempt(rt, kind, path, namespace)
    assert again is not None and again.messages_stored == again.curated_stored == 0, path
    assert state(rt) == after, f"{kind}: importing again changed the home ({path})"
    path.unlink()


@pytest.mark.parametrize("kind", KINDS)
def test_importer_fuzz(home, kind):
    @settings(FUZZ, max_examples=EXAMPLES)
    @given(raw=damaged(kind, FILES[kind]))
    def run(raw):
        check(home, kind, raw)
    run()


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_importer_fuzz_long(home, kind):
    @settings(FUZZ, max_examples=SLOW_EXAMPLES)
    @given(raw=damaged(kind, FILES[kind]))
    def run(raw):
        check(home, kind, raw)
    run()


def test_print_figures():
    for kind, fig in sorted(FIGURES.items()):
        print(f"importer fuzz {kind}: {json.dumps(fig)}")
    assert all(f["crashes"] == f["hangs"] == f["partial"] == 0 for f in FIGURES.values())
