"""The ``remember`` tool: store messages durably (and host-curated memories, if given).

Its input models and result, and the call in three steps: ``remember_prep.py`` checks every
input and prepares what is new (outside the lock), ``remember_write.py`` checks again and
writes under the namespace's write lock."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .answer import doc, quoted
from .params import TIME, DateTimeStr
from .remember_prep import checked, prepared
from .remember_write import committed
from .runtime import Runtime
from ..strategies import registry


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(description="The message text, stored verbatim.",
                         examples=["I moved to Lisbon last week."])
    speaker: str | None = Field(default=None, description="Who said it (a name or 'user'/'assistant').",
                                examples=["user", "Ana"])
    timestamp: DateTimeStr | None = Field(default=None, description="When the message was sent "
                                          "(ISO-8601; default: the session's time).")
    ref: str | None = Field(default=None, description="Your own id for the message; echoed wherever it "
                            "is cited, and a message whose ref this session already holds is not "
                            "stored twice (safe retries).", examples=["msg-41"])
    metadata: dict[str, Any] | None = Field(default=None,
                                            description="Any JSON object, kept with the message.")


class CuratedEpisode(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(description="A short title for what happened.")
    summary: str = Field(description="What happened, in a few sentences.")
    details: str = Field(default="", description="Anything else worth keeping.")
    timestamp: DateTimeStr | None = Field(default=None, description="When it happened (ISO-8601; "
                                          "default: the session's time).")
    refs: list[str] = Field(default_factory=list, description="refs of the messages it came from")


class CuratedFact(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str = Field(description="Who or what the fact is about.", examples=["Ana"])
    relation: str = Field(description="The relation, as a verb phrase.", examples=["works at"])
    object: str = Field(description="The other end of the relation.", examples=["Lumen"])
    timestamp: DateTimeStr | None = Field(default=None, description="When it became true (ISO-8601; "
                                          "default: the session's time).")
    context: str = Field(default="", description="The sentence or situation it comes from.")
    refs: list[str] = Field(default_factory=list, description="refs of the messages it came from")


class Curated(BaseModel):
    """Memories the host's own model already wrote, stored as given and linked to messages."""

    model_config = ConfigDict(extra="forbid")
    episodes: list[CuratedEpisode] = Field(default_factory=list,
                                           description="Summaries of what happened.")
    facts: list[CuratedFact] = Field(default_factory=list,
                                     description="Subject-relation-object facts.")


class RememberResult(BaseModel):
    session_id: str = Field(description="The session the messages went into (reuse it to append).")
    source_ids: list[str] = Field(description="One id per message given, in order (an already "
                                              "stored one keeps its id).")
    stored: int = Field(description="How many messages were new (the rest were already stored).")
    curation: Literal["done", "queued"] = Field(description="queued: the session's notes are "
                                                "being written in the background.")


def remember(rt: Runtime, messages: list[Message], session_id: str | None = None,
             session_time: str | None = None, namespace: str = "default",
             curated: Curated | None = None, progress=None) -> RememberResult:
    """Validate everything, embed, then write: sources in one commit (all or nothing).
    ``progress(done, total, message)``, if given, hears how far the embedding got."""
    return remember_session(rt, messages, session_id, session_time, namespace, curated,
                            progress)[0]


def remember_session(rt: Runtime, messages: list[Message], session_id: str | None = None,
                     session_time: str | None = None, namespace: str = "default",
                     curated: Curated | None = None, progress=None, *, whole_session=False,
                     keep_ids: list[str | None] | None = None) -> tuple[RememberResult, list[str]]:
    """:func:`remember`, and the ids of the curated memories it stored. For an import:
    ``whole_session`` lifts the per-call limits (so a session is one write, whatever its size);
    ``keep_ids[i]``, for a message without a ref, is the id it is stored under (the one it had
    where it was exported, so forget records naming it hold here too); a message whose kept id
    the session already holds is not stored again.

    Three steps: ``remember_prep.checked`` (every input, before anything is read or
    embedded), ``remember_prep.prepared`` (what is new, embedded before the lock, or for a
    small call while its session row commits) and
    ``remember_write.committed`` (the check again and the writes, under the namespace's write
    lock). Background curation lets
    a write in progress pass, and starts no session while writes keep arriving
    (``tools/curation.py``)."""
    with rt.writes:
        return _remember_session(rt, messages, session_id, session_time, namespace, curated,
                                 progress, whole_session, keep_ids)


def _remember_session(rt: Runtime, messages: list[Message], session_id: str | None,
                      session_time: str | None, namespace: str, curated: Curated | None,
                      progress, whole_session: bool,
                      keep_ids: list[str | None] | None) -> tuple[RememberResult, list[str]]:
    call = checked(rt, messages, session_id, session_time, namespace, curated, whole_session,
                   keep_ids)
    prep = prepared(rt, call, progress)

    curates = bool(rt.config.curation and registry.curates())
    new_rows, memory_ids = committed(rt, call, prep, curates)
    ids = [prep.known.get(r["ref"]) or r["id"] for r in call.rows]
    if curates:
        rt.curation.enqueue(call.ns, call.sid)
    if progress is not None:
        done = len(new_rows) + len(prep.extra)
        progress(done, done, "stored")
    from ..storage.allocators import trim_when_idle  # lazy: pyarrow, not at start-up

    trim_when_idle()   # the call's embedding batches and rows, back to the system once calls pause
    return RememberResult(session_id=call.sid, source_ids=ids, stored=len(new_rows),
                          curation="queued" if curates else "done"), memory_ids


def text_of(out: RememberResult, given: int, namespace: str) -> str:
    again = given - out.stored
    return (f"Stored {out.stored} message(s) in session {quoted(out.session_id)} of namespace "
            f"{quoted(namespace)}" + (f"; {again} already stored" if again else "")
            + ("; curation queued (runs in the background)." if out.curation == "queued" else "."))


MESSAGES = Annotated[list[Message], Field(
    description="The new messages, oldest first: [{content, speaker?, timestamp?, ref?, metadata?}].",
    examples=[[{"content": "I moved to Lisbon last week.", "speaker": "user", "ref": "msg-41"}]])]
SESSION_ID = Annotated[str | None, Field(
    description="Groups messages into one conversation (an episode). Reuse it to append to a "
                "session; omit it to start a new one (its id is returned).",
    examples=["chat-2024-05-08"])]
SESSION_TIME = Annotated[DateTimeStr | None, TIME(
    "When the session took place (ISO-8601); messages without a timestamp get it.")]
CURATED = Annotated[Curated | None, Field(
    description="Optional: memories your own model already wrote ({episodes: [...], facts: "
                "[...]}, each with the refs of the messages it came from).")]

DESCRIPTION = doc("""
    Store conversation messages in long-term memory. Call it after each exchange.

    `session_id` groups messages into one conversation; reuse it to append, omit it to start a
    new session. Everything is durable when this returns, and nothing is stored if any input is
    bad. A message whose `ref` the session already holds is not stored again, so retries are
    safe. This is the only tool that creates a namespace.
    """)
