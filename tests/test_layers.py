"""The import layers hold: server -> transfer -> tools -> strategies -> storage / providers.

A module may import its own layer and the layers below it, never one above. Every import in
the package counts, including the lazy ones inside functions (``ast.walk`` sees them all), and
relative imports are resolved against the importing module. ``transfer/`` (export / import of a
memory folder) sits between the server that offers it and the tools it replays into; ``bench/``
drives the whole stack from outside and is no layer. The package root (``__init__.py``) is
outside the layers too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "trimem"

# rank: a module may import only packages of equal or lower rank
RANK = {"storage": 0, "providers": 0, "strategies": 1, "tools": 2, "transfer": 3, "server": 4}
# storage and providers share a rank but do not depend on each other either
SIBLINGS_APART = {("storage", "providers"), ("providers", "storage")}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def _imported(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every import in the file, relative ones resolved."""
    module = _module_name(path, root)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            if _layer(target) is None:  # ``from .. import tools`` names a subpackage
                found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != PACKAGE:
        return None
    return parts[1] if parts[1] in RANK else None


def violations(root: Path = ROOT) -> list[str]:
    bad: list[str] = []
    for layer in RANK:
        for path in sorted((root / layer).rglob("*.py")):
            for line, target in _imported(path, root):
                other = _layer(target)
                if other is None or other == layer:
                    continue
                if RANK[other] > RANK[layer] or (layer, other) in SIBLINGS_APART:
                    rel = path.relative_to(root)
                    bad.append(f"{rel}:{line}: {layer} imports {target} ({other})")
    return bad


def test_layers_hold():
    bad = violations()
    assert not bad, "import layers broken:\n" + "\n".join(bad)


def test_checker_sees_lazy_and_relative_imports(tmp_path):
    """The checker itself: an upward import inside a function, written relatively, is caught."""
    (tmp_path / "storage").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "storage" / "x.py").write_text(
        "def f():\n    from ..tools import runtime\n    from .. import tools\n", encoding="utf-8"
    )
    bad = violations(tmp_path)
    assert len(bad) >= 2, bad
    assert all("storage/x.py:2" in b or "storage/x.py:3" in b for b in bad)
