"""Export -> import round trip: LoCoMo recall before and after, and sizes / times at 10k turns.

    python -m trimem.bench.transfer locomo --data ../shared/data/locomo --convs 26,30
    python -m trimem.bench.transfer scale --turns 10000
    python -m trimem.bench.transfer reading --conversations 1000

``locomo``: each conversation is remembered into a home, exported with the ``trimem export``
code, imported into a fresh home with the ``trimem import`` code; every category 1-4 question is
then recalled (2,000 tokens, each of ``--strategies``) in both homes, and R / H and the contexts
are compared question by question. Curation is off unless ``--curate``: then both homes curate
(the first as the sessions arrive, the second after the import) and are settled before the
questions, so the curating strategies are compared on memory each home built for itself.
``scale``: a synthetic namespace of ``--turns`` turns (bench/synth.py) is exported (JSONL and
Markdown), imported into a fresh home, and imported again (nothing new): sizes and times.
``reading``: a synthetic ChatGPT export is read and checked, nothing written (MiB/s).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def _rt(home: str, curation: bool = False):
    from ..server.settings import Settings
    from ..tools.runtime import Runtime

    return Runtime(Settings(home=home, curation=curation).to_config())


def export_to(rt, namespaces: list[str], path: Path) -> tuple[int, float]:
    from ..transfer.export import export_records
    from ..transfer.format import write_all

    t0 = time.perf_counter()
    header, records = export_records(rt, namespaces)
    with open(path, "w", encoding="utf-8") as fp:
        n = write_all(fp, header, records)
    return n, time.perf_counter() - t0


def import_from(rt, path: Path):
    from ..transfer.format import read_all
    from ..transfer.importer import import_records

    t0 = time.perf_counter()
    with open(path, encoding="utf-8") as fp:
        _, records = read_all(fp)
    report = import_records(rt, records)
    return report, time.perf_counter() - t0


def compare_sources(sa, sb) -> bool:
    """Same ids, sessions, order, text, speakers, times, refs, metadata and vectors."""
    import numpy as np

    cols = ("id", "session_id", "seq", "ref", "speaker", "timestamp", "text", "metadata")
    ra = sorted(sa.sources.all(), key=lambda r: r.id)
    rb = sorted(sb.sources.all(), key=lambda r: r.id)
    if [r.view(*cols) for r in ra] != [r.view(*cols) for r in rb]:
        return False
    ids = [r.id for r in ra]
    va, vb = sa.sources.vectors(ids), sb.sources.vectors(ids)
    return all(np.array_equal(va[i], vb[i]) for i in ids)


def settle(space) -> None:
    """Background upkeep folds rows into the indexes at moments that depend on timing, and a
    BM25 index built in steps scores like no other: wait for upkeep, compact, and build the
    full-text index once from the rows (what ``forget`` does), so both homes search alike."""
    space.upkeep.wait(flush=True)
    space.upkeep.optimize()
    space.sources.rebuild_text_index()


def locomo(args) -> dict:
    from . import locomo as lc
    from ..tools.recall import recall

    tmp = Path(args.home or tempfile.mkdtemp(prefix="trimem-transfer-"))
    again = (tmp / "locomo.jsonl").exists()     # --home of an earlier run: recall only
    a, b = _rt(str(tmp / "a"), args.curate), _rt(str(tmp / "b"), args.curate)
    strategies = args.strategies.split(",")
    convs = lc.load(Path(args.data), args.convs)
    dump = tmp / "locomo.jsonl"
    if again:
        n, t_exp, t_imp, report = sum(1 for _ in open(dump)) - 1, None, None, None
    else:
        for ns, raw in convs:
            lc.ingest(a, ns, raw)
        a.curation.wait_idle()
        n, t_exp = export_to(a, [ns for ns, _ in convs], dump)
        report, t_imp = import_from(b, dump)
    b.curation.wait_idle()      # (no-ops with curation off)
    same_rows = all(compare_sources(a.space(ns), b.space(ns)) for ns, _ in convs)
    for rt in (a, b):   # the same rows; make the search indexes the same too (see settle)
        for ns, _ in convs:
            settle(rt.space(ns))
    rows = {(s, k): [] for s in strategies for k in "ab"}
    same_ctx = {s: 0 for s in strategies}
    same_src = {s: 0 for s in strategies}
    n_q = 0
    for ns, raw in convs:
        conv = raw.get("conversation", raw)
        texts = {t["dia_id"]: lc.norm_ws(lc.turn_text(t)) for _, _, ts in lc.sessions(conv)
                 for t in ts}
        for qa in raw["qa"]:
            if qa.get("category") not in lc.CATS:
                continue
            gold, _ = lc.norm_evidence(qa.get("evidence", []), set(texts))
            if not gold:
                continue
            n_q += 1
            for s in strategies:
                outs = {}
                for k, rt in (("a", a), ("b", b)):
                    outs[k] = recall(rt, qa["question"], s, ns, 2000)
                    rows[(s, k)].append(lc.score(outs[k], gold, texts, str(qa.get("answer", "")),
                                                 2000))
                same_ctx[s] += outs["a"].context == outs["b"].context
                same_src[s] += ([x.ref for x in outs["a"].sources]
                                == [x.ref for x in outs["b"].sources])
    a.close()
    b.close()
    summ = {k: {m: round(sum(r[m] for r in v) / len(v), 4) for m in ("R", "H")}
            for k, v in rows.items() if v}
    return {"convs": [ns for ns, _ in convs], "records": n, "bytes": dump.stat().st_size,
            "export_s": t_exp and round(t_exp, 2), "import_s": t_imp and round(t_imp, 2),
            "imported": report and report.messages_stored, "identical_rows_and_vectors": same_rows,
            "questions": n_q, "curated": bool(args.curate),
            "identical_contexts": same_ctx, "identical_source_lists": same_src,
            "before": {s: summ.get((s, "a")) for s in strategies},
            "after": {s: summ.get((s, "b")) for s in strategies}}


def scale(args) -> dict:
    from .synth import Synth
    from ..tools.remember import Message, remember
    from ..transfer.markdown import write_markdown

    tmp = Path(tempfile.mkdtemp(prefix="trimem-transfer-"))
    a = _rt(str(tmp / "a"))
    n, t0 = 0, time.perf_counter()
    for sid, when, msgs in Synth(seed=11).sessions():
        remember(a, [Message(**m) for m in msgs], sid, when, "bench")
        n += len(msgs)
        if n >= args.turns:
            break
    t_fill = time.perf_counter() - t0
    out = {"turns": n, "remember_s": round(t_fill, 1), "home": str(tmp)}
    _stage(out)
    dump = tmp / "bench.jsonl"
    records, t_exp = export_to(a, ["bench"], dump)
    t0 = time.perf_counter()
    files = write_markdown(a, ["bench"], tmp / "md")
    t_md = time.perf_counter() - t0
    a.close()
    out |= {"records": records, "jsonl_bytes": dump.stat().st_size, "export_s": round(t_exp, 2),
            "markdown_bytes": sum(f.stat().st_size for f in files), "markdown_s": round(t_md, 2)}
    _stage(out)
    b = _rt(str(tmp / "b"))
    first, t_imp = import_from(b, dump)
    out |= {"import_s": round(t_imp, 1), "imported": first.messages_stored}
    _stage(out)
    again, t_again = import_from(b, dump)
    b.close()
    return out | {"reimport_s": round(t_again, 2), "reimported": again.messages_stored,
                  "already_stored": again.messages_already_stored}


def reading(args) -> dict:
    """Read and check (no write) a synthetic ChatGPT export of ``--conversations`` chats of 40
    turns of 80 words: what the import's time bound has to cover, per MiB."""
    import random

    from ..transfer import read_file
    from ..transfer.bounds import Bounds, Deadline, Refusals
    from ..transfer.plan import Plan

    rnd = random.Random(1)
    words = "the of and a to in is you that it was for on are as with they at be this".split()
    convs = []
    for c in range(args.conversations):
        mapping = {"root": {"id": "root", "parent": None, "children": ["n0"], "message": None}}
        for i in range(40):
            mapping[f"n{i}"] = {"id": f"n{i}", "parent": f"n{i - 1}" if i else "root",
                                "children": [f"n{i + 1}"] if i < 39 else [], "message": {
                                    "id": f"c{c}-n{i}", "author": {"role": ("user", "assistant")[i % 2]},
                                    "create_time": 1.7e9 + i, "content": {"parts": [
                                        " ".join(rnd.choice(words) for _ in range(80))]}}}
        convs.append({"conversation_id": f"c{c}", "title": f"chat {c}", "mapping": mapping})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversations.json"
        path.write_text(json.dumps(convs))
        mib = path.stat().st_size / 2**20
        rt = _rt(str(Path(tmp) / "home"))
        rt.store.namespaces()   # LanceDB's import and the store's opening are not reading
        refused, deadline = Refusals(), Deadline(Bounds().timeout_s)
        t0 = time.perf_counter()
        records = read_file("chatgpt", path, "bench", Bounds(), refused, deadline)
        t1 = time.perf_counter()
        Plan(rt, records, False, refused, deadline)
        t2 = time.perf_counter()
        rt.close()
    return {"mib": round(mib, 1), "messages": sum(r.type == "message" for r in records),
            "read_s": round(t1 - t0, 2), "check_s": round(t2 - t1, 2),
            "mib_per_s": round(mib / (t2 - t0), 2)}


def _stage(out: dict) -> None:
    """A long run reports each stage as it ends (stderr), so a stopped run still has figures."""
    import sys

    print(json.dumps(out, default=str), file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lo = sub.add_parser("locomo")
    lo.add_argument("--data", default="../shared/data/locomo")
    lo.add_argument("--convs", default="26")
    lo.add_argument("--home", default="", help="keep both homes here (a/, b/, locomo.jsonl); "
                    "a folder of an earlier run is reused: recall only")
    lo.add_argument("--strategies", default="plain")
    lo.add_argument("--curate", action="store_true",
                    help="both homes curate (for the curating strategies); settled before asking")
    sc = sub.add_parser("scale")
    sc.add_argument("--turns", type=int, default=10_000)
    rd = sub.add_parser("reading", help="read and check a synthetic ChatGPT export (no write)")
    rd.add_argument("--conversations", type=int, default=1_000)
    args = ap.parse_args(argv)
    out = {"locomo": locomo, "scale": scale, "reading": reading}[args.cmd](args)
    print(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
