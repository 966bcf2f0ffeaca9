"""The ``none`` LLM: configured when no chat model is available.

Strategies are expected to check :func:`is_none` and fall back to heuristics (extractive summaries,
rule-based merges) instead of calling the model. Calling it anyway raises a :class:`ProviderError`
that says how to configure a model, rather than returning an empty or made-up answer that would
silently degrade memory quality.
"""

from __future__ import annotations

import logging
from typing import TypeVar

from pydantic import BaseModel

from .base import ProviderError

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

_HINT = ("set TRIMEM_LLM=openai with TRIMEM_LLM_BASE_URL and TRIMEM_LLM_MODEL "
         "(any OpenAI-compatible server, e.g. Ollama at http://localhost:11434/v1)")


class NoLLM:
    """Satisfies the ``LLM`` protocol; every call raises ``ProviderError``."""

    name = "none"

    def complete(self, system: str, user: str) -> str:
        raise ProviderError(f"no LLM configured: cannot complete text; {_HINT}")

    def structured(self, system: str, user: str, schema: type[T]) -> T:
        raise ProviderError(f"no LLM configured: cannot produce {schema.__name__}; {_HINT}")

    def __repr__(self) -> str:
        return "NoLLM()"


def is_none(llm: object) -> bool:
    """True when ``llm`` is absent or the ``none`` provider (callers should use heuristics)."""
    return llm is None or isinstance(llm, NoLLM) or getattr(llm, "name", None) == "none"
