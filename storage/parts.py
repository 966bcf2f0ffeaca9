"""What the mixins of :class:`~trimem.storage.space.Space` use of one another, declared once
for the type checker: the state ``Space.__init__`` sets and the methods other mixins define.
Nothing here exists at run time beyond the annotations; ``Space`` provides it all."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .db import Store


class SpaceParts:
    store: Store
    namespace: str
    key: str
    model: str | None
    dim: int | None
    _vector_kinds: dict[str, object]
    _plain_kinds: set[str]

    if TYPE_CHECKING:
        def table(self, kind: str, schema: Any = None, create: bool = False) -> Any: ...
        def exists(self) -> bool: ...
        def after_write(self, kind: str, n_rows: int = 0) -> None: ...
        def scalar_indexes(self, kind: str, columns: dict[str, str],
                           rebuild: bool = False) -> None: ...
        def _has_vectors(self, kind: str) -> bool: ...
        @staticmethod
        def dumps(obj: Any) -> str: ...
        @staticmethod
        def now() -> datetime: ...
