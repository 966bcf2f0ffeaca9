"""How the tools write the text a host's model reads: quoted names, one-line JSON, descriptions.

Each tool's ``text_of`` writes the short text of its result with these; the MCP adapter
(``server/mcp_tools.py``) sends that text as the result's content and the whole result as
structured content.
"""

from __future__ import annotations

import inspect
import json
from typing import Any


def quoted(name: str) -> str:
    """A user-given name (namespace, session id, ref) as it appears in text the model reads:
    JSON-quoted, so it cannot end the sentence it stands in or start a line of its own."""
    return json.dumps(name, ensure_ascii=False)


def names(values: list[str], limit: int = 10) -> str:
    """Up to ``limit`` quoted names, comma-separated, with the rest counted."""
    shown = ", ".join(quoted(v) for v in values[:limit])
    more = len(values) - limit
    return shown + (f" and {more} more" if more > 0 else "") if values else "none"


def doc(text: str) -> str:
    """A tool description without the source code's indentation."""
    return inspect.cleandoc(text)


def compact_json(obj: Any) -> str:
    """One line of JSON; ``<`` and ``>`` escaped too, so no stored string in it reads as a tag
    (such as a forged ``</memory>``) to the model."""
    text = json.dumps(obj, ensure_ascii=False, default=str, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e")
