"""Which words of the product code are concentrated in one development conversation.

    python -m trimem.bench.vocab_audit --data ../shared/data/locomo --data ../shared/data/realtalk

A word of a product-code string literal (``server/ tools/ storage/ strategies/ providers/
transfer/``, docstrings and comments excluded) is reported when it occurs at least ``--min``
times in exactly one conversation of the given data sets and at most once in every other one:
a word a hand-written list may have been tuned on. The output is the list to read by hand;
``tests/test_no_benchmark_vocabulary.py`` keeps the words judged benchmark-specific out.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections import Counter
from pathlib import Path

PRODUCT = ("server", "tools", "storage", "strategies", "providers", "transfer")
_WORD = re.compile(r"[a-z][a-z'-]{2,}")


def product_words(root: Path) -> dict[str, set[str]]:
    """word -> files whose string literals (not docstrings) hold it."""
    out: dict[str, set[str]] = {}
    for d in PRODUCT:
        for f in sorted((root / d).rglob("*.py")):
            tree = ast.parse(f.read_text())
            docs = {id(n.body[0].value) for n in ast.walk(tree)
                    if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef,
                                      ast.ClassDef)) and n.body
                    and isinstance(n.body[0], ast.Expr)
                    and isinstance(getattr(n.body[0], "value", None), ast.Constant)}
            for n in ast.walk(tree):
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
                    for w in _WORD.findall(n.value.lower()):
                        out.setdefault(w, set()).add(str(f.relative_to(root)))
    return out


def turns(conv: dict):
    conv = conv.get("conversation", conv)
    n = 1
    while f"session_{n}" in conv or f"session_{n + 1}" in conv:
        for t in conv.get(f"session_{n}") or []:
            yield (t.get("text") or t.get("clean_text") or "") + " " + (t.get("blip_caption") or "")
        n += 1


def conversation_counts(folders: list[Path]) -> dict[str, Counter]:
    out = {}
    for d in folders:
        for f in sorted(d.glob("*.json")):
            raw = json.loads(f.read_text())
            text = " ".join(turns(raw)).lower()
            out[f.stem] = Counter(_WORD.findall(text))
    return out


def concentrated(words: dict[str, set[str]], counts: dict[str, Counter], least: int):
    for w in sorted(words):
        per = {c: n[w] for c, n in counts.items() if n[w]}
        top = [c for c, k in per.items() if k >= least]
        if len(top) == 1 and all(k <= 1 for c, k in per.items() if c != top[0]):
            yield w, top[0], per[top[0]], sorted(words[w])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--data", action="append", required=True)
    ap.add_argument("--min", type=int, default=3)
    args = ap.parse_args(argv)
    root = Path(__file__).resolve().parents[1]
    counts = conversation_counts([Path(d) for d in args.data])
    for w, conv, n, files in concentrated(product_words(root), counts, args.min):
        print(f"{w}\t{conv}\t{n}\t{' '.join(files)}")


if __name__ == "__main__":
    main()
