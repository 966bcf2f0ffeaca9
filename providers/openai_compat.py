"""Embedder and LLM for any OpenAI-compatible HTTP endpoint (OpenAI, Ollama, vLLM, llama.cpp ...).

Choices worth knowing:

* ``openai`` is imported lazily, when the first request is made: importing it costs ~0.3 s, and
  building a provider (at server start, from settings) must stay instant and never touch the network.
* The SDK's own retry loop is switched off (``max_retries=0``) and replaced by ours: exactly
  ``max_retries`` retries on *transient* failures only (connection errors and timeouts, 429, 5xx) with
  a short exponential backoff, so a dead local server fails in well under a second instead of the
  SDK's multi-second schedule. Every other failure becomes a :class:`ProviderError` naming the
  endpoint and, where it helps, the setting to fix.
* Embeddings are requested with ``encoding_format="float"`` (several servers reject the SDK's
  default base64), re-ordered by the ``index`` field the API returns, checked for count and
  dimension, and L2-normalised to float32 here: servers differ on whether they normalise.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from .base import ProviderError

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)
R = TypeVar("R")

_PROBE_TEXT = "dimension probe"
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class _Endpoint:
    """What the embedder and the LLM share: a lazily built client and the retry/error policy."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float, max_retries: int,
                 retry_backoff: float, what: str, setting: str) -> None:
        self.base_url = base_url.rstrip("/")
        # the SDK insists on a key string, even for local servers that ignore it
        self._api_key = api_key or "not-needed"
        self._timeout = timeout
        self._max_retries = max_retries
        self._retry_backoff = retry_backoff
        self._what = what  # "embedding" / "chat": used in error messages
        self._setting = setting  # the TRIMEM_ setting that holds base_url
        self._client: Any = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import openai  # lazy: openai (~0.3 s), not until the first request

                self._client = openai.OpenAI(base_url=self.base_url, api_key=self._api_key,
                                             timeout=self._timeout, max_retries=0)
            return self._client

    def call(self, fn: Callable[[Any], R]) -> R:
        """Run ``fn(client)``; retry transient failures; turn SDK errors into ProviderError."""
        import openai  # lazy: openai (~0.3 s), not until the first request

        attempts = self._max_retries + 1
        for attempt in range(attempts):
            try:
                result = fn(self.client())
                if isinstance(result, str):  # the SDK hands back non-JSON bodies (e.g. HTML) as str
                    raise ProviderError(self._not_api(f"a non-JSON body: {result[:80]!r}"))
                return result
            except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
                if attempt + 1 >= attempts:
                    raise self._error(exc, attempts) from exc
                delay = self._retry_backoff * (2**attempt)
                log.warning("%s endpoint %s: %s; retry %d/%d in %.2fs", self._what, self.base_url,
                            _describe(exc), attempt + 1, self._max_retries, delay)
                time.sleep(delay)
            except openai.OpenAIError as exc:
                raise self._error(exc, attempt + 1) from exc
            except (AttributeError, TypeError) as exc:
                # raised inside the SDK's response parsers (``parse``) when the body is not an
                # OpenAI-shaped object; ``fn`` itself is only a thin SDK call
                raise ProviderError(self._not_api(f"a body the SDK could not read ({exc})")) from exc
        raise AssertionError("unreachable")

    def _not_api(self, what: str) -> str:
        return (f"{self._what} endpoint {self.base_url} answered {what}: is it an OpenAI-compatible "
                f"API base (usually ending in /v1)? Check {self._setting}")

    def _error(self, exc: Exception, attempts: int) -> ProviderError:
        import openai  # lazy: openai (~0.3 s), not until the first request

        where = f"{self._what} endpoint {self.base_url}"
        if isinstance(exc, openai.APITimeoutError):
            msg = f"{where} timed out after {self._timeout}s ({attempts} attempt(s))"
        elif isinstance(exc, openai.APIConnectionError):
            msg = (f"cannot reach {where} ({attempts} attempt(s)): is the server running? "
                   f"Check {self._setting}")
        elif isinstance(exc, openai.AuthenticationError):
            msg = f"{where} rejected the API key (401): {_describe(exc)}"
        elif isinstance(exc, openai.NotFoundError):
            msg = (f"{where} answered 404 ({_describe(exc)}): wrong model name, or the URL lacks the "
                   f"API prefix (usually .../v1)? Check {self._setting}")
        else:
            msg = f"{where} failed after {attempts} attempt(s): {_describe(exc)}"
        return ProviderError(msg)


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"HTTP {status}: {text}" if status else text


class OpenAIEmbedder:
    """Embedder over ``POST {base_url}/embeddings``.

    ``dim`` may be left unset: it is then read from the first response. Reading ``embedder.dim``
    before any ``embed`` call sends one short probe request, so storage can size its vector column
    (note: on Python 3.11, ``isinstance(e, Embedder)`` reads ``dim`` and therefore probes too).
    When ``dim`` is given, a response of another width is a configuration error and raises.
    """

    def __init__(self, base_url: str, api_key: str | None, model: str, dim: int | None = None,
                 batch_size: int = 128, timeout: float = 30, *, max_retries: int = 2,
                 retry_backoff: float = 0.25) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.name = f"openai:{model}"
        self.model = model
        self.batch_size = batch_size
        self._dim = dim
        self._endpoint = _Endpoint(base_url, api_key, timeout, max_retries, retry_backoff,
                                   "embedding", "TRIMEM_EMBED_BASE_URL")

    @property
    def dim(self) -> int:
        if self._dim is None:
            log.info("discovering embedding width of %s with a probe request", self.name)
            self._embed_batch([_PROBE_TEXT])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._embed_batch(texts[i:i + self.batch_size])
                 for i in range(0, len(texts), self.batch_size)]
        return parts[0] if len(parts) == 1 else np.vstack(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)   # one request for a recall's query and its variants

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        # OpenAI itself rejects empty strings; a single space embeds as "nothing" everywhere.
        inputs = [t if t.strip() else " " for t in batch]
        resp = self._endpoint.call(lambda c: c.embeddings.create(
            model=self.model, input=inputs, encoding_format="float"))
        where = f"embedding endpoint {self._endpoint.base_url} (model {self.model!r})"
        data = getattr(resp, "data", None)
        if not isinstance(data, list) or len(data) != len(inputs):
            got = len(data) if isinstance(data, list) else type(resp).__name__
            raise ProviderError(f"{where} returned {got} embeddings for {len(inputs)} inputs")
        # The spec carries an index per row; some servers answer out of order.
        rows = sorted(data, key=lambda d: getattr(d, "index", None) or 0)
        try:
            arr = np.asarray([getattr(r, "embedding", None) for r in rows], dtype=np.float32)
        except (TypeError, ValueError) as exc:  # ragged rows or non-numbers
            raise ProviderError(f"{where} returned malformed vectors: {exc}") from exc
        if arr.ndim != 2 or arr.shape[1] == 0:
            raise ProviderError(f"{where} returned vectors of shape {arr.shape}")
        if self._dim is None:
            self._dim = int(arr.shape[1])
            log.info("%s: embedding width is %d", self.name, self._dim)
        elif arr.shape[1] != self._dim:
            raise ProviderError(f"{where} returned {arr.shape[1]}-dim vectors but dim={self._dim} is "
                                f"configured: wrong model, or fix the configured dimension")
        norms = np.linalg.norm(arr, axis=1, keepdims=True)
        if np.any(norms == 0):
            log.warning("%s returned %d all-zero vector(s); left unnormalised", self.name,
                        int(np.sum(norms == 0)))
        return (arr / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)


class OpenAILLM:
    """Chat model over ``POST {base_url}/chat/completions``.

    ``structured`` first asks for strict ``json_schema`` output (``chat.completions.parse``). If the
    server rejects that (HTTP 400/422, common with older local servers), it falls back, for this and
    every later call, to ``response_format={"type": "json_object"}`` with the JSON schema spelled out
    in the system prompt, and validates the answer with ``schema.model_validate_json``.
    """

    def __init__(self, base_url: str, api_key: str | None, model: str, timeout: float = 60, *,
                 max_retries: int = 2, retry_backoff: float = 0.25) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self._json_schema_ok = True
        self._endpoint = _Endpoint(base_url, api_key, timeout, max_retries, retry_backoff,
                                   "chat", "TRIMEM_LLM_BASE_URL")

    @staticmethod
    def _messages(system: str, user: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def complete(self, system: str, user: str) -> str:
        resp = self._endpoint.call(lambda c: c.chat.completions.create(
            model=self.model, messages=self._messages(system, user)))
        content = self._message(resp).content
        if not content:
            raise ProviderError(f"chat model {self.model!r} returned an empty answer")
        return content

    def structured(self, system: str, user: str, schema: type[T]) -> T:
        import openai  # lazy: openai (~0.3 s), not until the first request

        if self._json_schema_ok:
            try:
                resp = self._endpoint.call(lambda c: c.chat.completions.parse(
                    model=self.model, messages=self._messages(system, user), response_format=schema))
            except ValidationError as exc:
                raise ProviderError(f"chat model {self.model!r} answered JSON that does not match "
                                    f"{schema.__name__}: {exc}") from exc
            except ProviderError as exc:
                cause = exc.__cause__
                if not isinstance(cause, (openai.BadRequestError, openai.UnprocessableEntityError)):
                    raise
                log.warning("chat endpoint %s rejected json_schema output (%s); falling back to "
                            "json_object mode", self._endpoint.base_url, _describe(cause))
                self._json_schema_ok = False
            else:
                message = self._message(resp)
                if message.parsed is not None:
                    return message.parsed
                raise ProviderError(f"chat model {self.model!r} gave no {schema.__name__} "
                                    f"(refusal: {message.refusal!r}, content: {message.content!r:.200})")
        return self._structured_json_object(system, user, schema)

    def _structured_json_object(self, system: str, user: str, schema: type[T]) -> T:
        spec = json.dumps(schema.model_json_schema())
        system = (f"{system}\n\nAnswer with one JSON object only, no prose, matching this JSON Schema:"
                  f"\n{spec}")
        resp = self._endpoint.call(lambda c: c.chat.completions.create(
            model=self.model, messages=self._messages(system, user),
            response_format={"type": "json_object"}))
        content = self._message(resp).content or ""
        fenced = _FENCE.match(content)  # unconstrained models like ```json fences
        try:
            return schema.model_validate_json(fenced.group(1) if fenced else content)
        except ValidationError as exc:
            raise ProviderError(f"chat model {self.model!r} answered JSON that does not match "
                                f"{schema.__name__}: {exc}; answer was {content!r:.200}") from exc

    def _message(self, resp: Any) -> Any:
        choices = getattr(resp, "choices", None)
        if not choices:
            raise ProviderError(f"chat endpoint {self._endpoint.base_url} returned no choices")
        if choices[0].finish_reason == "length":
            log.warning("chat model %s hit its token limit; the answer is truncated", self.model)
        return choices[0].message
