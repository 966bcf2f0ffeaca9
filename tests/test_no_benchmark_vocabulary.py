"""The product must not know its benchmarks: no word, name or loader string of the development
conversations in product code (``bench/`` and ``tests/`` are not product code).

``BENCHMARK_WORDS`` are topics that occur in a single development conversation and once sat in
keyword lists said to be general (found with ``bench/vocab_audit.py``); ``LOADER_STRINGS`` are
what the benchmark loaders write into messages or read from the data files; ``SPEAKER_HASHES`` are the
development conversations' speaker labels and the names they call each other.
"""

import hashlib
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
# the speaker names, as sha256 prefixes of the exact word: the test must not carry them either
SPEAKER_HASHES = {
    "0e4dd66217fc8d2e", "18f3e03c082126c0", "1a5d06a170dde413", "1e03ad2efe6a505d",
    "20db27389fe56b55", "277be9ed203a00ef", "35298781dc6efb3d", "417e91e05d885d5a",
    "4d08697ada75dc79", "5f39b51ae9a4dacb", "739061d73d65dcde", "9ff18ebe7449349f",
    "a3f432225e05fbef", "a8cfcd7483200495", "aac09a648fc382b6", "b33a55596a12d5df",
    "ba4612c2d0886f3b", "ba9b353684f9ae6b", "daec5a7c2834cecd",
}


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


def digest(word: str) -> str:
    return hashlib.sha256(word.encode()).hexdigest()[:16]


def test_no_benchmark_speaker_name():
    found = []
    for f in product_files():
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if any(digest(w) in SPEAKER_HASHES for w in re.findall(r"[A-Za-z]+", line)):
                found.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_the_name_check_can_fail():
    assert digest("Alex") not in SPEAKER_HASHES and len(SPEAKER_HASHES) == 19
