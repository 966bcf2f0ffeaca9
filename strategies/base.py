"""What every recall strategy implements, and the shapes it hands back to the tools.

A strategy is any object with a ``name`` and a ``recall(env, request)`` method returning a
:class:`Recollection`; it may also curate sessions (``curate``) and consolidate
(``consolidate``). Strategies register themselves by name in ``strategies.registry``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable, Generic, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field
from typing_extensions import TypeVar

from .options import RecallOptions
from .space_api import StrategySpace

if TYPE_CHECKING:
    from ..providers.base import LLM
    from ..storage.rows import Source
    from .context import NamespaceContext
    from .search import TurnSearch

ItemKind = Literal["episode", "fact", "unit", "thread", "claim", "page", "source"]


class Item(BaseModel):
    """One selected piece of memory."""

    id: str
    kind: ItemKind
    text: str
    score: float
    role: str | None = None
    timestamp: datetime | None = None
    source_ids: list[str] = Field(default_factory=list)


class SourceRef(BaseModel):
    """A raw source whose own text stands verbatim in the returned context (for a long message:
    the excerpt quoted, ``text == message[start:end]``; see ``docs/contract.md``)."""

    id: str
    ref: str | None = None
    session_id: str
    speaker: str | None = None
    timestamp: datetime | None = None
    text: str
    start: int | None = Field(None, description="When only an excerpt of a long message is "
                              "quoted: where it starts in the message's text (characters).")
    end: int | None = Field(None, description="Where the quoted excerpt ends (exclusive); "
                            "null when the whole message is quoted.")


class Recollection(BaseModel):
    """A strategy's answer to one recall, before the tool logs it and assigns a recall id."""

    context: str
    items: list[Item]
    sources: list[SourceRef]
    abstain: bool = False
    route_reason: str = ""
    trace: dict[str, Any] = Field(default_factory=dict)


@dataclass
class RecallRequest:
    query: str
    budget_tokens: int
    since: datetime | None = None
    until: datetime | None = None
    options: RecallOptions = field(default_factory=RecallOptions)   # options.py
    # asked by ``auto`` for a voter's ranking: the items, route_reason and abstain are used, the
    # trace is not, so a strategy may leave out the parts of it that cost time to build
    ranking_only: bool = False
    # the budget whose quote width (``render.quote_width``) long messages are excerpted at, when
    # not this request's: ``auto``'s voters rank for 2x its caller's budget, but what they weigh
    # a long message's cost by is the excerpt its caller's context will quote
    quote_budget: int | None = None

    @property
    def quote_tokens(self) -> int:
        """The budget that sets the quote width of long messages."""
        return self.quote_budget or self.budget_tokens

    def in_window(self, ts: datetime | None) -> bool:
        """Whether a source's or memory's time falls within ``since``..``until``, both ends
        included. An undated row is outside any window: it passes only when neither bound is
        set, as in the storage filter (``storage.filters.SourceFilter``), where a comparison
        with a null timestamp is never true. Every strategy filters by this one rule."""
        if ts is None:
            return self.since is None and self.until is None
        return (self.since is None or ts >= self.since) and (self.until is None or ts <= self.until)


# The storage an ``Env`` carries: strategies see a ``StrategySpace`` (a bare ``Env``), the tools
# that build it the concrete ``Space`` (``Env[Space]``, ``tools/runtime.py``).
SpaceT = TypeVar("SpaceT", bound=StrategySpace, covariant=True, default=StrategySpace)


@dataclass(frozen=True)
class Env(Generic[SpaceT]):
    """What a strategy may use: one namespace's storage, what this process keeps for the
    namespace between calls (its caches, lock and pool: ``context.NamespaceContext``), the
    embedder and the LLM."""

    space: SpaceT                     # bound to the embedder's model (``space_api``)
    ns: "NamespaceContext"            # owned by the runtime; a strategy keeps no state elsewhere
    embed_query: Callable[[str], Any]  # str -> np.ndarray (dim,)
    embed_queries: Callable[[list[str]], Any]  # list[str] -> np.ndarray (n, dim), in one call
    embed: Callable[[list[str]], Any]  # list[str] -> np.ndarray (n, dim)
    llm: LLM | None = None             # None: heuristics only
    turns: TurnSearch | None = None    # the search auto shares with its voters, or None
    # the embedder embeds a query differently from a document of the same text (e5's "query: "
    # and "passage: "): a query's cosines to turns do not run like two turns' cosines
    asymmetric: bool = False


@runtime_checkable
class Strategy(Protocol):
    """Required: ``name`` and ``recall``. A strategy may also implement any of the optional
    hooks below (each its own protocol, found with ``registry.with_hook``), and may carry
    ``Options`` (:class:`Configurable`)."""

    name: str

    def recall(self, env: Env, request: RecallRequest) -> Recollection:
        ...


Progress = Callable[[int, int, str], None]   # (done, total, message), called synchronously


@runtime_checkable
class Curates(Protocol):
    """(Re)build this strategy's derived data for one session from its sources; idempotent;
    runs in the background worker, never on the request path. What it returns is not read."""

    name: str

    def curate(self, env: Env, session_id: str) -> object:
        ...


@runtime_checkable
class Consolidates(Protocol):
    """Offline clustering, merging, superseding; returns ``{"before", "after", "clusters",
    "operations"}`` counts and lists."""

    name: str

    def consolidate(self, env: Env, dry_run: bool, min_cluster_size: int,
                    progress: Progress | None = None) -> dict[str, Any]:
        ...


@runtime_checkable
class Forgets(Protocol):
    """Delete (and, where needed, rebuild) derived data that cites any of ``source_ids``;
    returns the number of rows removed."""

    name: str

    def forget(self, env: Env, source_ids: set[str]) -> int:
        ...


@runtime_checkable
class Explains(Protocol):
    """Explain one of this strategy's own ids, or None when the id is not its own."""

    name: str

    def explain(self, env: Env, id: str) -> dict | None:
        ...


@runtime_checkable
class Configurable(Protocol):
    """A strategy with recall options: ``Options`` is the frozen dataclass of the options it
    reads (``options.py``), read with ``request.options.of(Options)``."""

    Options: type


def tokens_of(text: str) -> int:
    """The contract's token count: ceil(chars / 4)."""
    return -(-len(text) // 4)


# What a host ran rather than what anyone said: tool calls and their results, as capture stores
# them (docs/capture.md). Such rows are sources like any other (searched, quoted, cited), but
# they are nobody's words: they never vote on who a speaker is, and curation leaves them out.
TOOL_SPEAKER = "tool"


def spoken(rows: list[Source]) -> list[Source]:
    """``rows`` without the tool rows (see ``TOOL_SPEAKER``), in their order."""
    return [r for r in rows if r.speaker != TOOL_SPEAKER]


class StrategyFailure(RuntimeError):
    """A strategy's step that failed before it wrote anything; ``str(exc)`` says why, for the
    user (``tools/`` passes it on as the tool's error)."""
