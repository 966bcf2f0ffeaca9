"""A real local OpenAI-compatible embeddings endpoint (``POST /v1/embeddings``): the one test
double the project allows, a remote embeddings service. Its vectors are a hashed bag of words of
``dim`` slots (the model name's trailing number, e.g. ``wide-768``), so turns that share words
are close, deterministically."""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from local_http import JSONHandler, serving


def bag_of_words(text: str, dim: int) -> list[float]:
    """Each lower-cased word adds 1 to a hashed one of ``dim`` slots; L2-normalised."""
    v = np.zeros(dim)
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        v[int.from_bytes(hashlib.sha256(w.encode()).digest()[:4], "big") % dim] += 1.0
    n = np.linalg.norm(v)
    return (v / n if n else v).tolist()


class Embeddings(JSONHandler):
    """Just ``POST /v1/embeddings`` of the OpenAI API."""

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        body = self.body()
        self.server.calls += 1  # type: ignore[attr-defined]
        dim = int(re.findall(r"\d+", body["model"])[-1])
        if self.path != "/v1/embeddings":
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        self._send(200, {"object": "list", "model": body["model"],
                         "data": [{"object": "embedding", "index": i,
                                   "embedding": bag_of_words(t, dim)}
                                  for i, t in enumerate(body["input"])],
                         "usage": {"prompt_tokens": 1, "total_tokens": 1}})


@pytest.fixture
def endpoint():
    """(server, base URL); ``server.calls`` counts the requests."""
    with serving(Embeddings) as srv:
        srv.calls = 0  # type: ignore[attr-defined]
        yield srv, f"http://127.0.0.1:{srv.server_address[1]}/v1"
