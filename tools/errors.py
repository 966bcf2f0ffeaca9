"""Turn storage failures the user can fix (disk full, read-only folder) into clear tool errors.

LanceDB reports them as OSError or RuntimeError with the operating system's message inside; a
write that fails this way never half-commits (a LanceDB commit is atomic), so the message can
truthfully say that nothing was stored.
"""

from __future__ import annotations

import functools
import inspect

from mcp.server.mcpserver.exceptions import ToolError

KNOWN = [
    (("no space left", "disk quota", "enospc"),
     "the memory folder {home} is full: nothing was stored; free some space and retry"),
    (("read-only file system", "permission denied", "erofs", "eacces", "access denied"),
     "the memory folder {home} is not writable (read-only or no permission): nothing was "
     "stored; point TRIMEM_HOME at a writable folder"),
]


def translate(exc: BaseException, home: str) -> ToolError | None:
    text = str(exc).lower()
    for needles, message in KNOWN:
        if any(n in text for n in needles):
            return ToolError(message.format(home=home))
    return None


def friendly(fn, home: str):
    """Wrap a tool function (sync or async) so known storage failures become ToolErrors."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def wrapper(*a, **kw):
            try:
                return await fn(*a, **kw)
            except (OSError, RuntimeError) as exc:
                err = translate(exc, home)
                if err is None:
                    raise
                raise err from exc
        return wrapper

    @functools.wraps(fn)
    def sync_wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except (OSError, RuntimeError) as exc:
            err = translate(exc, home)
            if err is None:
                raise
            raise err from exc
    return sync_wrapper


def guard(rt):
    """Decorator form of :func:`friendly` for a tool registered against runtime ``rt``."""
    return lambda fn: friendly(fn, rt.config.home)
