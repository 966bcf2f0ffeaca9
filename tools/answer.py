"""What a tool hands back to the host: short text for the model, the full result as structured
content.

A host gives its model a tool result's *text content*; ``structured_content`` (validated against
the tool's output schema) is for the host's own code. The SDK would otherwise put a pretty-printed
JSON copy of the whole result in the text, so every recalled line would reach the model three
times. Each tool's ``register`` returns :func:`answer` and annotates its return type as
``Annotated[CallToolResult, ResultModel]``, which keeps the output schema.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


def answer(text: str, result: BaseModel) -> CallToolResult:
    """One text block for the model; the whole ``result`` as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=result.model_dump(mode="json"))


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
