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
from pathlib import Path

from .base import LLM, Embedder

log = logging.getLogger(__name__)

EMBEDDER_KINDS = ("local", "openai")
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


def make_embedder(kind: str, *, model: str | None = None, base_url: str | None = None,
                  api_key: str | None = None, cache_dir: str | Path | None = None) -> Embedder:
    """Embedder for ``TRIMEM_EMBEDDER``: ``local`` (bundled ONNX model) or ``openai`` (any
    OpenAI-compatible ``/v1/embeddings``; needs ``TRIMEM_EMBED_BASE_URL`` and ``TRIMEM_EMBED_MODEL``)."""
    k = _kind(kind, EMBEDDER_KINDS, "TRIMEM_EMBEDDER")
    if k == "local":
        from .local import LocalEmbedder  # lazy: heavy imports, see module docstring

        log.info("embedder: local (cache_dir=%s)", cache_dir)
        return LocalEmbedder(cache_dir=None if cache_dir is None else Path(cache_dir))
    from .openai_compat import OpenAIEmbedder

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
        from .llm_none import NoLLM

        log.info("llm: none (heuristics only)")
        return NoLLM()
    from .openai_compat import OpenAILLM

    url = _require(base_url, "TRIMEM_LLM_BASE_URL", "TRIMEM_LLM")
    name = _require(model, "TRIMEM_LLM_MODEL", "TRIMEM_LLM")
    log.info("llm: openai-compatible %s at %s", name, url)
    return OpenAILLM(url, api_key, name)
