"""Parameter types shared by the tools, each with the description a host's model reads."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictInt
from pydantic.fields import FieldInfo

# Integer and boolean parameters are strict: pydantic's default (lax) mode would read ``true`` as
# 1, ``"100"`` as 100, ``100.0`` as 100 and ``"yes"`` / ``1`` as True, so a caller's mistake
# would run with a value it never meant (``forget`` with ``all_recalls: "yes"``). Every integer
# and boolean parameter is declared with these; tests/tools/test_errors.py checks each one the
# tools' input schemas list.
Int = StrictInt
Bool = StrictBool

NAMESPACE = Annotated[str, Field(
    description="Which memory to use: namespaces keep projects or people apart and nothing "
                "crosses them. Only `remember` creates one; the resource trimem://namespaces "
                "lists them.", examples=["default", "work"])]


# An ISO-8601 time: JSON Schema ``format: date-time`` (the tools also accept one without a zone,
# taken as UTC, and parse it themselves, so the message for a bad one says what to fix).
DateTimeStr = Annotated[str, Field(json_schema_extra={"format": "date-time"})]


def TIME(description: str) -> FieldInfo:   # noqa: N802 - reads as a type in signatures
    """The description of an optional time parameter (typed ``DateTimeStr | None``)."""
    return Field(description=description, examples=["2024-05-08T13:56:00Z"])
