"""REALTALK evidence coverage: the LoCoMo benchmark's code on the REALTALK chats.

    python -m trimem.bench.realtalk --data ../shared/data/realtalk --strategies plain --budget 2000

REALTALK (Lee et al., 2025) is 21 days of real messaging between two people, with memory-probing
questions and the evidence turns that answer them. Its files differ from LoCoMo's in the ways
listed here, and :mod:`trimem.bench.locomo` reads both (it looks at the file names in ``--data``):

* files ``Chat_<n>_<names>.json`` (``--convs 1,3`` picks chats 1 and 3);
* turns carry ``clean_text`` (no ``text``) and their own ``date_time`` ('29.12.2023, 22:42:04'),
  which becomes each message's timestamp (LoCoMo turns share their session's time);
* ``dia_id`` numbering follows days, not sessions, and is unique within a chat;
* question categories 1 multi-hop, 2 temporal, 3 commonsense / inference (no single-hop);
* some evidence ids name no turn ('', 'D:56', 'D58'): they are dropped and counted; a trailing
  period ('D20:6.') is tolerated. A question left with no valid evidence id is not asked.

Scoring, output and options are exactly those of :mod:`trimem.bench.locomo`.
"""

from __future__ import annotations

import sys

GLOB = "Chat_*.json"
TIME_FORMAT = "%d.%m.%Y, %H:%M:%S"
CATS = {1: "multi-hop", 2: "temporal", 3: "commonsense"}


def main(argv: list[str] | None = None) -> None:
    from .locomo import main as locomo_main

    argv = list(sys.argv[1:] if argv is None else argv)
    if not any(a == "--data" or a.startswith("--data=") for a in argv):
        argv = ["--data", "../shared/data/realtalk", *argv]
    locomo_main(argv)


if __name__ == "__main__":
    main()
