"""What one recall touches: storage method calls and trimem modules entered, per strategy.

    python -m trimem.bench.calls --home STORE --data ../shared/data/locomo --strategies auto,wiki

On a store the LoCoMo benchmark built (``--home``, namespace = conversation), each of the first
``--n`` questions of ``--conv`` is recalled once per strategy (after one warm-up recall each),
through the ``recall`` tool (``tool``: the tool layer, its recall log included) and through the
strategy alone (``strategy``). Counted per recall: every call of a method of ``Space`` or of a
repository it is composed of (``Sources.get``, ``Derived.rows``, ...), calls the methods make to
each other included (the classes' methods are wrapped for the run), the calls made from outside
them (``outer``: what the callers ask of storage; ``top_calls`` lists those),
the distinct ``trimem`` modules whose code ran (``sys.setprofile`` in every thread; auto's
voter pool is restarted so its threads are profiled too), and LanceDB round trips
(``lancedb_mean``: every call lancedb's synchronous API makes into its background event loop:
a query is three to five of them, the schema read twice, the execution, each batch).
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any


class Counting:
    """Wraps every method of some classes for the run (a namespace's ``Space`` and the
    repositories it is composed of); ``calls`` counts them by ``Class.method``, ``outer`` only
    the calls made from outside them (what the strategies ask of storage)."""

    def __init__(self, *classes):
        self.calls, self.outer = Counter(), Counter()
        self.saved: list[tuple[type, str, Any]] = []
        self.lock = threading.Lock()
        self.depth = threading.local()
        for cls in classes:
            for name, fn in vars(cls).items():
                if (name.startswith("__") or not callable(fn)
                        or isinstance(fn, (staticmethod, classmethod))):
                    continue
                self.saved.append((cls, name, fn))
                setattr(cls, name, self._wrap(f"{cls.__name__}.{name}", fn))

    def _wrap(self, name, fn):
        @functools.wraps(fn)
        def counted(*a, **kw):
            d = getattr(self.depth, "n", 0)
            with self.lock:
                self.calls[name] += 1
                if d == 0:
                    self.outer[name] += 1
            self.depth.n = d + 1
            try:
                return fn(*a, **kw)
            finally:
                self.depth.n = d
        return counted

    def restore(self):
        for cls, name, fn in self.saved:
            setattr(cls, name, fn)


class Modules:
    """The trimem modules whose functions were entered while active (all threads)."""

    def __init__(self):
        self.seen: set[str] = set()
        self.on = False

    def profile(self, frame, event, arg):
        if self.on and event == "call":
            name = frame.f_globals.get("__name__", "")
            if name.startswith("trimem.") and not name.startswith("trimem.bench"):
                self.seen.add(name)

    def install(self):
        sys.setprofile(self.profile)
        threading.setprofile(self.profile)


class RoundTrips:
    """Counts the calls into lancedb's background event loop while installed (all threads)."""

    def __init__(self):
        from lancedb import background_loop

        self.n = 0
        self.lock = threading.Lock()
        self.cls: Any = background_loop.BackgroundEventLoop   # Any: its method is patched
        self.orig = self.cls.run
        counter = self

        def run(loop, fut):
            with counter.lock:
                counter.n += 1
            return counter.orig(loop, fut)
        self.cls.run = run

    def restore(self):
        self.cls.run = self.orig


def run(args) -> dict:
    from ..server.settings import Settings
    from ..storage.core import SpaceCore
    from ..storage.derived import Derived
    from ..storage.logs import Log
    from ..storage.memories import Memories
    from ..storage.passages import Passages
    from ..storage.sessions import Sessions
    from ..storage.sources import Sources
    from ..storage.space import Space
    from ..storage.upkeep import Upkeep
    from ..strategies.base import RecallRequest
    from ..strategies.registry import get
    from ..tools.recall import recall
    from ..tools.runtime import Runtime
    from .locomo import load

    rt = Runtime(Settings(home=args.home).to_config())
    name, raw = next(iter(load(Path(args.data), args.conv)))
    qs = [qa["question"] for qa in raw["qa"]][: args.n + 1]
    warm, qs = qs[0], qs[1:]
    mods = Modules()
    mods.install()   # before the runtime's first recall starts the voter threads
    out = {"conversation": name, "questions": len(qs), "budget": args.budget}
    for s in args.strategies.split(","):
        recall(rt, warm, s, name, args.budget)
        for layer in ("tool", "strategy"):
            per_calls, per_outer, per_mods, per_lance, by_name = [], [], [], [], Counter()
            for q in qs:
                env = rt.env(name)
                counting = Counting(Space, SpaceCore, Sources, Passages, Sessions, Memories,
                                    Derived, Log, Upkeep)
                trips = RoundTrips()
                mods.seen, mods.on = set(), True
                try:
                    if layer == "tool":
                        recall(rt, q, s, name, args.budget)
                    else:
                        get(s).recall(env, RecallRequest(query=q, budget_tokens=args.budget))
                finally:
                    mods.on = False
                    counting.restore()
                    trips.restore()
                per_lance.append(trips.n)
                per_calls.append(sum(counting.calls.values()))
                per_outer.append(sum(counting.outer.values()))
                per_mods.append(len(mods.seen))
                by_name.update(counting.outer)
            out[f"{s} {layer}"] = {
                "space_calls_mean": round(statistics.mean(per_calls), 1),
                "space_calls_max": max(per_calls),
                "outer_calls_mean": round(statistics.mean(per_outer), 1),
                "modules_mean": round(statistics.mean(per_mods), 1),
                "lancedb_mean": round(statistics.mean(per_lance), 1),
                "top_calls": {k: round(v / len(qs), 1) for k, v in by_name.most_common(8)}}
    rt.close()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--home", required=True, help="a store the LoCoMo benchmark built")
    ap.add_argument("--data", default="../shared/data/locomo")
    ap.add_argument("--conv", default="26", help="the conversation (as --convs of locomo)")
    ap.add_argument("--strategies", default="auto,wiki")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--n", type=int, default=20, help="questions per strategy")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    out = run(args)
    text = json.dumps(out, indent=2)
    if args.json:
        Path(args.json).write_text(text)
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
