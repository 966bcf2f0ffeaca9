"""Per-strategy recall options: typed, frozen, checked once where a call comes in.

A recall may carry options (benchmarks and experiments: ``--opt hops=2``; the MCP tool offers
none). Each strategy declares what it reads as a frozen dataclass, its ``Options`` attribute
(``PlainOptions``, ``WorkspaceOptions``, ...), whose defaults are the values that ship. The raw
``key -> value`` pairs are checked once, at the service layer (``tools/recall.py``): a key that
no registered strategy declares is an error there, so a misspelt option fails loudly instead of
being ignored. A request then carries them as :class:`RecallOptions`, and each strategy reads
its own typed view with ``request.options.of(ItsOptions)``: the keys it declares, converted to
their fields' types (``"3"`` and ``3.0`` are ``3`` for an ``int`` field), the rest left to the
other strategies. One key may mean a field of several strategies (``candidates``, ``k``): as
before, a key applies to every strategy that declares it, and ``auto`` hands its voters
requests of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, TypeVar

__all__ = ["OptionError", "RecallOptions", "declared", "parse_as"]

T = TypeVar("T")

# the field annotations the option classes use (``from __future__ import annotations``: strings)
_CONVERT: dict[str, Callable[[Any], Any]] = {"int": int, "float": float, "str": str,
                                             "float | None": float, "str | None": str}


class OptionError(ValueError):
    """An option no strategy declares, or a value its field's type cannot take."""


def declared(cls: type) -> set[str]:
    """The option keys a strategy's options class reads (its fields and ``ALIASES``)."""
    return {f.name for f in fields(cls)} | set(getattr(cls, "ALIASES", ()))


def parse_as(cls: type[T], raw: Mapping[str, Any]) -> T:
    """``cls`` from the keys of ``raw`` it declares, each converted to its field's type; a class
    with a ``resolve(kw, raw)`` class method first maps its aliases (workspace's ``B``)."""
    kw: dict[str, Any] = {}
    for f in fields(cls):   # pyright: ignore[reportArgumentType]
        if f.name in raw:
            convert = _CONVERT[str(f.type)]
            try:
                kw[f.name] = convert(raw[f.name])
            except (TypeError, ValueError) as exc:
                raise OptionError(f"option {f.name}={raw[f.name]!r}: not a {f.type}") from exc
    resolve = getattr(cls, "resolve", None)
    if resolve is not None:
        kw = resolve(kw, raw)
    return cls(**kw)


@dataclass(frozen=True)
class RecallOptions:
    """A recall's options, as checked at the service layer; read with :meth:`of`."""

    values: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # each strategy's typed view, parsed on its first read (wiki reads its own three times)
    _views: dict[type, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, known: Iterable[str] | None = None) -> RecallOptions:
        """Options from ``raw``; with ``known`` (the keys the registered strategies declare),
        an unknown key is an :class:`OptionError`."""
        raw = dict(raw or {})
        if known is not None:
            unknown = sorted(set(raw) - set(known))
            if unknown:
                raise OptionError(f"unknown recall option(s): {', '.join(map(str, unknown))} "
                                  f"(known: {', '.join(sorted(known))})")
        return cls(MappingProxyType(raw))

    def of(self, cls: type[T]) -> T:
        view = self._views.get(cls)
        if view is None:
            view = self._views[cls] = parse_as(cls, self.values)
        return view

    def __bool__(self) -> bool:
        return bool(self.values)
