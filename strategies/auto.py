"""``auto``: choose a strategy per query and say why.

The rule for now follows what the LoCoMo benchmark measured (bench/README.md): with curated
memory in the namespace (episodes and facts, from the host, an LLM or the heuristics), ``hybrid``
covers more evidence than ``plain`` in every question category at 2,000 tokens; without it (a
namespace whose sessions are not curated yet) ``hybrid`` has nothing of its own to add, and
``plain`` answers. Routing on query features and fusing several strategies is a later step.
"""

from __future__ import annotations

from .base import Env, Recollection, RecallRequest


class AutoStrategy:
    name = "auto"

    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        from .registry import get, names

        curated = "hybrid" in names() and any(
            env.space.count_memories(kind) for kind in ("episode", "fact"))
        chosen = "hybrid" if curated else "plain"
        out = get(chosen).recall(env, request)
        why = ("the namespace holds curated episodes/facts, and hybrid covers more evidence than "
               "plain in every LoCoMo category" if curated else
               "no curated episodes/facts in this namespace yet, so raw-turn search answers")
        out.route_reason = f"auto → {chosen}: {why}"
        out.trace["route"] = {"chosen": chosen, "available": names(), "curated": curated}
        return out
