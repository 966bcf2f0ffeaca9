"""The name registry of recall strategies.

The ``recall`` tool's ``strategy`` parameter is a Literal of exactly these names (a test checks
that the two agree). Strategy modules are imported lazily, on first use, so start-up stays fast.
"""

from __future__ import annotations

import importlib
from typing import Literal, TypeVar

from .base import Configurable, Curates, Strategy
from .options import declared

H = TypeVar("H")

# name -> "module:attribute" of the strategy object
_BUILTIN = {
    "plain": "trimem.strategies.plain.strategy:PlainStrategy",
    "auto": "trimem.strategies.auto.strategy:AutoStrategy",
    "hybrid": "trimem.strategies.hybrid.strategy:HybridStrategy",
    "workspace": "trimem.strategies.workspace.strategy:WorkspaceStrategy",
    "wiki": "trimem.strategies.wiki.strategy:WikiStrategy",
    # <new strategies above this line>
}
# The names a caller may pass; keep in step with _BUILTIN (tests/strategies/test_registry.py).
StrategyName = Literal[
    "auto",
    "plain",
    "hybrid",
    "workspace",
    "wiki",
    # <new strategy names above this line>
]

_loaded: dict[str, Strategy] = {}


def names() -> list[str]:
    return sorted(_BUILTIN)


def get(name: str) -> Strategy:
    """The strategy called ``name``; KeyError with the valid names otherwise."""
    if name not in _BUILTIN:
        raise KeyError(f"unknown strategy {name!r}; choose one of: {', '.join(names())}")
    strat = _loaded.get(name)
    if strat is None:
        module, attr = _BUILTIN[name].split(":")
        strat = _loaded[name] = getattr(importlib.import_module(module), attr)()
    return strat


def with_hook(hook: type[H]) -> list[H]:
    """Every registered strategy that implements the optional hook ``hook`` (one of the
    protocols ``base.Curates``, ``Consolidates``, ``Forgets``, ``Explains``), loading them if
    needed."""
    return [s for s in (get(n) for n in names()) if isinstance(s, hook)]


def option_keys() -> set[str]:
    """Every recall option some registered strategy declares (its ``Options`` class,
    ``options.py``), loading them all; ``tools/recall.py`` checks a call's options against it."""
    out: set[str] = set()
    for s in with_hook(Configurable):
        out |= declared(s.Options)
    return out


def curates() -> bool:
    """Whether any registered strategy curates sessions."""
    return bool(with_hook(Curates))


def register(name: str, target: str) -> None:
    """Add a strategy by import path (for plug-ins and tests)."""
    _BUILTIN[name] = target
    _loaded.pop(name, None)
