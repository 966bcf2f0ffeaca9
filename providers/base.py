"""Provider protocols: what strategies and storage may ask of an embedder or an LLM.

Concrete providers live beside this file; `providers.registry` builds them from settings.
Every embedder returns L2-normalised float32 rows, so cosine similarity is a dot product and
LanceDB's cosine distance is ``1 - dot``.
"""

from __future__ import annotations

from typing import Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np
from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)


class ProviderError(RuntimeError):
    """A provider could not do its job (missing weights, remote endpoint down, bad answer)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. ``name`` is recorded beside every stored vector."""

    name: str

    @property
    def dim(self) -> int:
        """The vectors' width (a remote embedder may learn it on first use)."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: shape (len(texts), dim), float32, rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query: shape (dim,), float32, L2-normalised."""
        ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed several search queries in one call (a recall's query and its variants):
        shape (len(texts), dim), each row what ``embed_query`` gives for that text."""
        ...


@runtime_checkable
class LLM(Protocol):
    """A chat model used for curation, merges and page text. ``none`` means: use heuristics."""

    name: str

    def complete(self, system: str, user: str) -> str:
        """Free-text answer."""
        ...

    def structured(self, system: str, user: str, schema: type[T]) -> T:
        """An answer parsed into ``schema`` (a pydantic model)."""
        ...
