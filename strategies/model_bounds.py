"""How much of a model's answer is stored: bounded by the size of what the model was shown.

A model's curation (an OpenAI-compatible endpoint, or the host's own model through MCP
sampling) is parsed into bounded schemas (``hybrid/llm_schema.py``: up to 100 episodes, 400
relational tuples and 600 wiki claims a session). Those bounds fit the longest sessions; a model
answering at them for a 3-turn session would store 500 memories and 600 claims, and spend half a
minute embedding them. So what is kept follows the size of what was shown:

* a turn counts one **unit** per started 1,000 characters (a 2,400-character turn counts 3);
* **episodes**: at most 1 per unit of the turns shown, and 3 whatever their size;
* **facts** (relational tuples): at most 4 per unit, and 8 whatever the size;
* **wiki claims**: at most 4 per unit of the turn each one cites.

The answer's first items are kept (a model lists what matters first); the rest are dropped, and
the caller reports how many.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..storage.rows import Source

log = logging.getLogger(__name__)
T = TypeVar("T")

CHARS_PER_UNIT = 1_000
EPISODES_PER_UNIT, EPISODES_FLOOR = 1, 3
FACTS_PER_UNIT, FACTS_FLOOR = 4, 8
CLAIMS_PER_UNIT = 4


def units(text: str) -> int:
    """A turn's size: one unit per started ``CHARS_PER_UNIT`` characters (at least one)."""
    return max(1, -(-len(text or "") // CHARS_PER_UNIT))


def shown_units(turns: Iterable[Source]) -> int:
    return sum(units(t.text or "") for t in turns)


def most_episodes(turns: Sequence[Source]) -> int:
    return max(EPISODES_FLOOR, EPISODES_PER_UNIT * shown_units(turns))


def most_facts(turns: Sequence[Source]) -> int:
    return max(FACTS_FLOOR, FACTS_PER_UNIT * shown_units(turns))


def most_claims(turn: Source) -> int:
    return CLAIMS_PER_UNIT * units(turn.text or "")


def first(items: list[T], most: int, what: str) -> list[T]:
    """The first ``most`` of ``items`` (logged when some are dropped)."""
    if len(items) > most:
        log.warning("a model's answer held %d %s for what it was shown; kept the first %d",
                    len(items), what, most)
    return items[:most]
