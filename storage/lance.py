"""Import lancedb without building the validators of a REST client the store never calls.

lancedb 0.40 imports ``lance_namespace``, which imports ``lance_namespace_urllib3_client``: the
generated client of the Lance REST namespace service, some 370 API functions wrapped in
pydantic's ``validate_call`` and a few hundred pydantic models, each validator built as its
module is imported. Here that is 1.2-1.5 s of the 2.7-3.0 s that ``import lancedb`` takes on a
quiet machine (twice as much under load), and every server process pays it on its first tool
call (measured in bench/README.md, "Cold start"). trimem talks to a local folder or an object
store, never to that service.

pydantic builds a validator on first use instead of at definition when its ``defer_build``
setting is on. No public switch reaches the decorators inside a third-party module, so
:func:`deferred_validators` turns pydantic's default on for the length of the import and puts it
back. Behaviour is unchanged: anything that does use one of those functions or models builds
its validator then. Where pydantic keeps its defaults elsewhere (another version), the import
simply runs the ordinary way.
"""

from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from typing import Iterator

try:
    from pydantic._internal import _config
except ImportError:   # another pydantic: lancedb is imported the ordinary way
    _config = None


@contextmanager
def deferred_validators() -> Iterator[None]:
    """pydantic's ``defer_build`` default on inside the block (see the module docstring).

    Entered once, below, where lancedb is imported for the whole package (the import system
    runs a module once, in one thread), so nothing else sets or restores the default meanwhile.
    A model another thread happens to define during the import is only built on its first use
    instead of at once."""
    try:
        defaults = _config.config_defaults   # pyright: ignore[reportOptionalMemberAccess]
    except AttributeError:   # another pydantic (or none of its internals): import as usual
        yield
        return
    if "defer_build" not in defaults:
        yield
        return
    before = defaults["defer_build"]
    defaults["defer_build"] = True
    try:
        yield
    finally:
        defaults["defer_build"] = before


def quiet_purge_warning() -> None:
    """Filter LanceDB's warning that ``optimize(cleanup_older_than=0)`` removes every version
    but the newest: a purge means it. Called before each such call (adding the same filter again
    replaces it), not wrapped around it: ``warnings.catch_warnings`` is not thread-safe (upkeep
    and purges run in background threads), and its restore let the warning through from them
    and could drop filters other threads had set."""
    warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)",
                            category=UserWarning)


# The storage modules take lancedb from here, so that whichever of them is imported first, the
# import runs inside the block (1.2-1.5 s less on the first tool call and in the index child).
os.environ.setdefault("LANCEDB_LOG", "error")  # Rust logs go to stderr; keep them quiet
with deferred_validators():
    import lancedb  # noqa: E402,F401 (the storage modules take it from here)
