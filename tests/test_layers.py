"""The import layers hold: server -> transfer -> tools -> strategies -> storage / providers.

A module may import its own layer and the layers below it, never one above. Every import in
the package counts, including the lazy ones inside functions (``ast.walk`` sees them all), and
relative imports are resolved against the importing module. ``transfer/`` (export / import of a
memory folder) sits between the server that offers it and the tools it replays into, and so
does ``capture/`` (the host's hooks and transcripts); ``bench/``
drives the whole stack from outside and is no layer. The package root (``__init__.py``) is
outside the layers too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "trimem"

# rank: a module may import only packages of equal or lower rank
RANK = {"storage": 0, "providers": 0, "strategies": 1, "tools": 2, "transfer": 3, "capture": 3,
        "server": 4}
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
            if _layer(target) is None or target.count(".") == 1:
                # ``from .. import tools`` names a layer, ``from ..strategies import frame`` a
                # module of one
                found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
    return found


def _layer(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != PACKAGE:
        return None
    return parts[1] if parts[1] in RANK else None


def _imports(root: Path, layers):
    """(layer, file relative to root, line, imported module) for every import of ``layers``."""
    for layer in layers:
        for path in sorted((root / layer).rglob("*.py")):
            for line, target in _imported(path, root):
                yield layer, path.relative_to(root), line, target


def violations(root: Path = ROOT) -> list[str]:
    bad: list[str] = []
    for layer, rel, line, target in _imports(root, RANK):
        other = _layer(target)
        if other is None or other == layer:
            continue
        if RANK[other] > RANK[layer] or (layer, other) in SIBLINGS_APART:
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


# What of ``strategies/`` the layers above ``tools/`` may import: the strategy-neutral modules
# (the result and request types and their constants, the framing of stored text for a model,
# stable ids). Stores, strategies and the registry are reached only through ``tools/``.
NEUTRAL = {"trimem.strategies.base", "trimem.strategies.frame", "trimem.strategies.ids"}


def past_tools(root: Path = ROOT) -> list[str]:
    """Imports from a layer above ``tools/`` (server, transfer, capture) into the strategies'
    stores and implementations; ``server/`` imports nothing of ``strategies/`` at all."""
    bad: list[str] = []
    for layer, rel, line, target in _imports(root, [lay for lay in RANK if RANK[lay] > RANK["tools"]]):
        if _layer(target) != "strategies" or target == "trimem.strategies":
            continue
        if layer == "server" or target not in NEUTRAL:
            bad.append(f"{rel}:{line}: {layer} imports {target}")
    return bad


def test_the_strategies_are_reached_through_tools():
    bad = past_tools()
    assert not bad, "past tools/ into strategies:\n" + "\n".join(bad)


def test_past_tools_checker_sees_a_store_import(tmp_path):
    for layer in RANK:
        (tmp_path / layer).mkdir()
    (tmp_path / "server" / "a.py").write_text("from ..strategies.base import Item\n")
    (tmp_path / "capture" / "b.py").write_text(
        "from ..strategies import frame\n\ndef f():\n    from ..strategies.wiki.store import TRAJ\n"
        "    from ..strategies import registry\n")
    bad = past_tools(tmp_path)
    assert sorted(bad) == ["capture/b.py:4: capture imports trimem.strategies.wiki.store",
                           "capture/b.py:5: capture imports trimem.strategies.registry",
                           "server/a.py:1: server imports trimem.strategies.base"], bad


SQL_HELPERS = {"sql_str", "sql_in", "sql_time"}
# a column compared with a quoted value, a list, a placeholder or a timestamp; array_has(...)
SQL_SHAPE = re.compile(r"\b[a-z_]+ (?:=|IN|>=|<=|<|>) (?:'|\(|\{|timestamp )|array_has\(")


def sql_above_storage(root: Path = ROOT) -> list[str]:
    """Filters cross the storage boundary as values (``storage.SourceFilter``, ``eq=`` dicts),
    never as SQL: above ``storage/`` nothing imports the quoting helpers, passes a ``where=``,
    or hands a search / count a string shaped like a filter."""
    bad: list[str] = []
    for layer in (lay for lay in RANK if RANK[lay] > 0):
        for path in sorted((root / layer).rglob("*.py")):
            rel = path.relative_to(root)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                if isinstance(node, ast.ImportFrom) and SQL_HELPERS & {a.name for a in node.names}:
                    bad.append(f"{rel}:{node.lineno}: imports a SQL quoting helper")
                if not isinstance(node, ast.Call):
                    continue
                if any(k.arg == "where" for k in node.keywords):
                    bad.append(f"{rel}:{node.lineno}: passes where=")
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, (ast.Constant, ast.JoinedStr)) and \
                            SQL_SHAPE.search(ast.unparse(arg)):
                        bad.append(f"{rel}:{node.lineno}: a SQL-shaped string argument")
    return bad


def test_no_sql_above_storage():
    bad = sql_above_storage()
    assert not bad, "SQL above storage/:\n" + "\n".join(bad)


def test_sql_checker_sees_a_filter_string(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "x.py").write_text(
        "def f(space, sid):\n    return space.sources.count(f\"session_id = '{sid}'\")\n")
    (tmp_path / "strategies").mkdir()
    (tmp_path / "strategies" / "y.py").write_text("from ..storage.db import sql_str\n")
    for layer in ("transfer", "server", "storage", "providers"):
        (tmp_path / layer).mkdir()
    assert len(sql_above_storage(tmp_path)) == 2


def mcp_below_server(root: Path = ROOT) -> list[str]:
    """Only ``server/`` speaks MCP: every layer below it (the service layer ``tools/``, the
    exporter / importer, strategies, storage, providers) imports nothing of the MCP SDK, lazily
    or not, so the CLI, the benchmarks and the tests call it without loading the SDK."""
    bad: list[str] = []
    for layer in (lay for lay in RANK if lay != "server"):
        for path in sorted((root / layer).rglob("*.py")):
            seen: set[int] = set()
            for line, target in _imported(path, root):
                if (target == "mcp" or target.startswith("mcp.")) and line not in seen:
                    seen.add(line)
                    bad.append(f"{path.relative_to(root)}:{line}: imports {target}")
    return bad


def test_only_the_server_imports_mcp():
    bad = mcp_below_server()
    assert not bad, "MCP below server/:\n" + "\n".join(bad)


def test_mcp_checker_sees_a_lazy_import(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "x.py").write_text(
        "def f():\n    from mcp.server.mcpserver.exceptions import ToolError\n")
    (tmp_path / "server").mkdir()
    (tmp_path / "server" / "y.py").write_text("import mcp\n")
    assert mcp_below_server(tmp_path) == ["tools/x.py:2: imports mcp.server.mcpserver.exceptions"]


def test_the_service_layer_runs_without_loading_the_sdk():
    """Importing every tool's service module and the runtime loads no ``mcp`` module (the kill -9
    driver, the CLI's offline commands and the benchmarks start that much faster)."""
    import subprocess
    import sys

    code = ("import sys; import trimem.tools.remember, trimem.tools.recall, trimem.tools.forget, "
            "trimem.tools.explain, trimem.tools.consolidate, trimem.tools.runtime, "
            "trimem.transfer.importer; "
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT.parent).stdout.strip()
    assert out == "[]", out
