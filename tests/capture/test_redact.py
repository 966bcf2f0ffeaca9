"""Secrets out of captured text (capture/redact.py): every planted kind found, its value gone,
the kind recorded; ordinary text untouched; redacting twice changes nothing."""

from __future__ import annotations

import time

import pytest

from trimem.bench.planted import planted
from trimem.capture.redact import redact

PLANTED = planted()


def test_many_kinds_are_planted():
    assert len({p.kind for p in PLANTED}) >= 12


@pytest.mark.parametrize("p", PLANTED, ids=[p.kind for p in PLANTED])
def test_each_planted_secret_is_replaced_by_its_kind(p):
    out = redact(f"before. {p.sentence} after.")
    assert p.value not in out.text
    assert f"[redacted: {p.kind}]" in out.text
    assert out.kinds[p.kind] >= 1
    assert out.text.startswith("before. ") and out.text.endswith(" after.")
    assert redact(out.text).text == out.text   # idempotent


def test_all_at_once_in_one_message():
    text = "\n".join(p.sentence for p in PLANTED)
    out = redact(text)
    assert not [p.kind for p in PLANTED if p.value in out.text]


ORDINARY = [
    "I went running with my sister yesterday and we talked about the new job.",
    "my password is too long to remember, so I wrote it on a sticky note",
    "max_tokens: 2048 and sort_key = created_at in the config",
    "The token budget is 2000 and the key insight was to batch the writes.",
    "Set API_KEY=$OPENAI_API_KEY in your shell, or PASSWORD=<your password>.",
    "See https://example.com/docs/a:b for the spec, and mail me at ana@example.com.",
    "def test_password_reset(): assert reset('x') is None",
    "The sk-learn package and the ghp prefix are both mentioned in the docs.",
    "Run `git log --oneline | head` and check the commit 3f9a2b1c.",
    "Token: the smallest unit the tokenizer produces, e.g. 'the' or 'ing'.",
    "secret_santa: true",
    "Bearer of good news: the build is green.",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_alone(text):
    out = redact(text)
    assert out.text == text and not out.kinds


def test_it_is_fast_on_a_long_reply():
    text = ("An ordinary paragraph about a refactor of the storage layer, with code: "
            "x = compute(a, b); y = x['key'] + 1.\n") * 2000   # ~230k characters
    t0 = time.perf_counter()
    out = redact(text)
    assert time.perf_counter() - t0 < 1.0
    assert out.text == text
