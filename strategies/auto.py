"""``auto``: choose a strategy per query and say why.

Until the paper strategies (hybrid, workspace, wiki) are registered, the only strategy to route
to is ``plain``; ``auto`` delegates to it and says so in ``route_reason``.
"""

from __future__ import annotations

from .base import Env, Recollection, RecallRequest


class AutoStrategy:
    name = "auto"

    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        from .registry import get

        out = get("plain").recall(env, request)
        out.route_reason = ("auto → plain: plain is the only strategy registered in this version, "
                            "so every query goes to it")
        out.trace["route"] = {"chosen": "plain", "available": ["plain"]}
        return out
