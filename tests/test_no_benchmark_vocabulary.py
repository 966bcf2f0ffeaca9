"""The product must not know its benchmarks: no word, name or loader string of the development
conversations in product code (``bench/`` and ``tests/`` are not product code).

``BENCHMARK_WORDS`` are topics that occur in a single development conversation and once sat in
keyword lists said to be general (found with ``bench/vocab_audit.py``); ``LOADER_STRINGS`` are
what the benchmark loaders write into messages or read from the data files; ``SPEAKERS`` are the
development conversations' speaker labels and the names they call each other.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("server", "tools", "storage", "strategies", "providers", "transfer")

BENCHMARK_WORDS = """turtle turtles pottery lgbtq transgender shelter parade violin guitar piano
surfing skating snake hamster horse fundraiser activist protest marathon sculpture""".split()
LOADER_STRINGS = ["shares a photo", "blip_caption", "clean_text", "dia_id", "img_url", "img_file",
                  "speaker_a", "speaker_b", "speaker_1", "speaker_2", "_observation",
                  "events_session", "(photo)"]
SPEAKERS = """Caroline Melanie Jon Gina John Maria Joanna Nate Tim Emi Elise Kate Kevin Paola
Nicolas Nebraas Vanessa Fahim Akib""".split()


def product_files():
    return [f for d in PRODUCT for f in sorted((ROOT / d).rglob("*.py"))]


def hits(pattern: re.Pattern) -> list[str]:
    out = []
    for f in product_files():
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if pattern.search(line):
                out.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    return out


def test_the_product_tree_is_searched():
    assert len(product_files()) > 50


@pytest.mark.parametrize("word", BENCHMARK_WORDS)
def test_no_benchmark_topic_word(word):
    assert hits(re.compile(rf"\b{word}\b", re.IGNORECASE)) == []


@pytest.mark.parametrize("text", LOADER_STRINGS)
def test_no_benchmark_loader_string(text):
    assert hits(re.compile(rf"(?<![A-Za-z]){re.escape(text)}(?![A-Za-z])", re.IGNORECASE)) == []


@pytest.mark.parametrize("name", SPEAKERS)
def test_no_benchmark_speaker_name(name):
    assert hits(re.compile(rf"\b{name}\b")) == []
