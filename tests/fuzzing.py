"""What the fuzz tests of every importer share (tests/transfer/test_import_fuzz.py for
``trimem import --from trimem|memory-json|chatgpt|claude``, tests/capture/test_agentlog_fuzz.py
for ``--from codex|gemini``): hostile values, JSON of any shape, the mutation of a file that is
valid by construction, and the bound every import must answer within."""

from __future__ import annotations

import json
import threading
import time

from hypothesis import HealthCheck, settings, strategies as st

BOUND_S = 10.0
HOSTILE = ["", " ", "\x00", "\ud800", "a\nb", "\u202e", "<script>x</script>", "' OR 1=1 --",
           "x" * 600, "ünïcødé 🙂", "entity:a#0", "src_0123456789abcdef0123", "\\", "null"]

words = st.text(alphabet="abcdefgh ", min_size=1, max_size=20)
text = st.one_of(words, words, words, st.text(max_size=24), st.sampled_from(HOSTILE),
                 st.just("y" * 100_001))
short = st.sampled_from(["a", "b", "c", "d"]) | text
finite = st.floats(allow_nan=False, allow_infinity=False)
number = st.one_of(st.integers(-10**20, 10**20), finite, finite,
                   st.sampled_from([0, -1, 1714000000, 1e300, 2**70, float("nan"), float("inf")]))
leaf = st.none() | st.booleans() | number | text
anything = st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(short, c, max_size=3),
                        max_leaves=12)

FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.large_base_example])


def deep(value, levels: int):
    for _ in range(levels):
        value = [value]
    return value


def paths(data) -> list[tuple]:
    out: list[tuple] = []
    stack: list[tuple[tuple, object]] = [((), data)]
    while stack:
        path, value = stack.pop()
        out.append(path)
        items = value.items() if isinstance(value, dict) else \
            enumerate(value) if isinstance(value, list) else []
        stack.extend((path + (k,), v) for k, v in items)
    return out


def at(data, path):
    for k in path:
        data = data[k]
    return data


@st.composite
def mutated(draw, files):
    """A file from ``files`` with a few values replaced, removed, repeated or nested deep."""
    data = draw(files)
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3, 6]))):
        path = draw(st.sampled_from(paths(data)))
        if not path:
            data = draw(anything)
            continue
        parent, key = at(data, path[:-1]), path[-1]
        how = draw(st.sampled_from(["value", "value", "hostile", "hostile", "remove", "repeat", "loop", "loop",
                                    "deep"]))
        if how == "remove":
            del parent[key]
        elif how == "repeat" and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[key])))
        elif how == "loop" and isinstance(parent, dict):   # a parent pointing into the tree
            parent[key] = draw(st.sampled_from([str(p[-1]) for p in paths(data) if p] or ["x"]))
        elif how == "deep":
            parent[key] = deep(parent[key], draw(st.sampled_from([63, 65, 100])))
        else:
            parent[key] = draw(anything if how == "value" else st.sampled_from(HOSTILE) | number)
    return data


def within_bound(fn):
    """Run ``fn`` in a thread: ({"out": result} or {"exc": exception}, seconds, still running)."""
    box: dict = {}

    def go():
        try:
            box["out"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised by the test
            box["exc"] = exc
    t = threading.Thread(target=go, daemon=True)
    t0 = time.monotonic()
    t.start()
    t.join(BOUND_S)
    took = time.monotonic() - t0
    return box, took, t.is_alive()


def answered(fig: dict, what: str, where, fn):
    """``fn()`` within :data:`BOUND_S`, counted in ``fig`` (``max_s``, ``hangs``, ``crashes``):
    its result, or the test fails naming ``what`` and ``where``."""
    import pytest

    box, took, hung = within_bound(fn)
    fig["max_s"] = max(fig["max_s"], took)
    if hung:
        fig["hangs"] += 1
        pytest.fail(f"{what}: no answer within {BOUND_S} s for {where}")
    if "exc" in box:
        fig["crashes"] += 1
        raise AssertionError(f"{what}: {box['exc']!r} for {where}") from box["exc"]
    return box["out"]
