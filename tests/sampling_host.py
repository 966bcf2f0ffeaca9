"""The scripted host model of the sampling tests (a real ``mcp.Client``'s ``sampling_callback``),
shared with ``bench/sampling_demo.py``."""

from trimem.bench.sampling_demo import ScriptedHost as Host

__all__ = ["Host"]
