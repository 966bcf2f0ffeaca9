"""Every module of the package imports where the POSIX-only modules do not exist (Windows):
a child interpreter refuses ``fcntl``, ``termios``, ``resource``, ``pwd``, ``grp``, ``tty``,
``pty`` and ``posix_ipc`` to every import statement in trimem's own modules (even when another
package loaded the module already; a module that needs one must import it behind a platform
check, or only when called) and imports every module under ``trimem``. Third-party
packages still get them: on Windows they take their own Windows paths, which this machine cannot
run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import builtins, importlib, json, pkgutil, sys

    POSIX_ONLY = {"fcntl", "termios", "resource", "pwd", "grp", "tty", "pty", "posix_ipc"}

    real_import = builtins.__import__

    def refusing_import(name, globals=None, locals=None, fromlist=(), level=0):
        # an import statement in one of trimem's modules (cached or not) is refused
        if (level == 0 and name.split(".")[0] in POSIX_ONLY
                and str((globals or {}).get("__name__", "")).startswith("trimem")):
            raise ModuleNotFoundError(f"No module named {name!r} (POSIX only)", name=name)
        return real_import(name, globals, locals, fromlist, level)

    builtins.__import__ = refusing_import
    import trimem

    failed, done = {}, []
    for info in pkgutil.walk_packages(trimem.__path__, "trimem."):
        if ".tests." in info.name or info.name.startswith("trimem.tests"):
            continue
        try:
            importlib.import_module(info.name)
            done.append(info.name)
        except Exception as exc:
            failed[info.name] = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"imported": len(done), "failed": failed}))
""")


def test_every_module_imports_without_the_posix_only_modules():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"imported {res['imported']} modules without fcntl, termios, resource, pwd, grp")
    assert not res["failed"], res["failed"]
    assert res["imported"] > 100
