"""The one settings class. Read only here, in ``server/``; tools get plain values (Config).

Settings come from ``TRIMEM_*`` environment variables and, below them, from one settings file:
``--env-file`` / ``TRIMEM_ENV_FILE`` when given, else ``settings.env`` in ``TRIMEM_HOME`` if it
exists. Never from the working directory: hosts start servers in arbitrary folders, and a
project's ``.env`` must not be able to redirect memory (or the embedder) elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
import platformdirs


def default_home() -> str:
    return platformdirs.user_data_dir("trimem", appauthor=False)


class Settings(BaseSettings):
    """Every option is an environment variable with the ``TRIMEM_`` prefix (see
    :func:`load_settings` for the settings file; ``Settings()`` alone reads no file)."""

    model_config = SettingsConfigDict(env_prefix="TRIMEM_", env_file=None, extra="ignore")

    home: str = Field(default_factory=default_home,
                      description="data folder or object-store URI (s3://bucket/trimem)")
    embedder: Literal["local", "e5-small", "openai"] = Field(
        default="local", description="local (MiniLM, bundled), e5-small (multilingual-e5-small; "
        "needs the e5 extra and, on x86-64, AVX2 and FMA: MiniLM runs where it cannot), openai")
    embed_model: str | None = None
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    llm: Literal["none", "openai", "sampling", "auto"] = Field(
        default="auto", description="who writes curated memories and merge texts: none (heuristics), "
        "openai (an OpenAI-compatible endpoint, in the background), sampling (the host's own "
        "model, asked during `consolidate`), auto (sampling when the client offers it, else "
        "heuristics)")
    sampling_timeout_s: float = Field(default=120.0, gt=0, description="how long consolidate waits for "
                                      "the host's model over a 2025-11-25 back-channel")
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    vector_index_min_rows: int = 10_000
    source_copy_max_rows: int = Field(
        default=200_000, ge=0, description="a namespace's source turns are kept in memory for "
        "dense search and look-ups up to this many (about 2.8 KB each); past it LanceDB answers")
    max_ram_mb: float = Field(
        default=1024, ge=0, description="MB of RAM kept to answer faster (LanceDB's index and "
        "metadata caches, in-memory copies of tables), shared by every open namespace; past it "
        "the store's own indexes answer, with the same results (the model and libraries, about "
        "450 MB, come on top)")
    curation_delay_s: float = Field(default=0.0, description="curate a session once idle this long")
    curation: bool = Field(default=True, description="false: keep raw sources only (plain recall); "
                           "the paper strategies then have nothing curated to use")
    consolidate_every_sessions: int = Field(
        default=0, ge=0, description="consolidate a namespace after this many newly curated sessions "
        "(the paper suggests 10-20); 0 = only when asked (the consolidate tool or command)")
    recall_log_days: float = Field(default=30.0, ge=0, description="recall records (what `explain` "
                                   "replays, queries included) older than this are deleted; "
                                   "0 = do not keep a recall log")
    recall_log_max: int = Field(default=10_000, ge=0, description="recall records kept per namespace "
                                "(the oldest go first)")
    recall_trace_max_bytes: int = Field(default=65_536, ge=1_024, description="largest trace kept per "
                                        "recall; bigger traces drop their largest fields")
    lock_wait_s: float = Field(default=30.0, gt=0, le=3_600, description="the longest a call waits "
                               "for a lock another process holds on the memory folder; it then "
                               "fails with an error naming the lock (must exceed lock_lease_s)")
    lock_lease_s: float = Field(default=10.0, ge=1, le=600, description="a lock whose holder went "
                                "silent this long (stopped, hung) is taken over; every process on "
                                "one memory folder must use the same value")
    max_messages: int = 1_000
    max_message_chars: int = 100_000
    max_call_chars: int = Field(default=4_000_000, description="characters per remember call, all "
                                "messages (and curated memories) together")
    max_budget_tokens: int = 100_000
    import_max_bytes: int = Field(default=512 * 2**20, ge=1, description="the largest file "
                                  "`trimem import` reads (bytes)")
    import_timeout_s: float = Field(default=1_800.0, gt=0, description="`trimem import` refuses a "
                                    "file it has not read and checked within this long (the "
                                    "write that follows is not limited: it is the embedder's time)")
    log_level: str = "WARNING"
    # capture through the host's hooks (`trimem hook`, docs/capture.md)
    hook_namespace: str | None = Field(default=None, description="the namespace every project's "
                                       "captured memory goes to (default: one per project)")
    hook_start_tokens: int = Field(default=800, ge=0, le=8_000, description="budget of the "
                                   "SessionStart context (0: none)")
    hook_prompt_recall: bool = Field(default=False, description="UserPromptSubmit: recall for "
                                     "each prompt and add it as context when it does not abstain")
    hook_prompt_tokens: int = Field(default=600, ge=50, le=8_000, description="budget of the "
                                    "UserPromptSubmit context")
    hook_prompt_timeout_s: float = Field(default=8.0, gt=0, description="UserPromptSubmit gives "
                                         "up (adding nothing) after this long")
    capture_linger_s: float = Field(default=20.0, ge=0, description="how long the drainer waits "
                                    "for the next hook before it exits")
    http_token: str | None = Field(default=None, description="bearer token for `serve --http`")
    http_allowed_hosts: list[str] = Field(default_factory=list,
                                          description="extra Host/Origin names for `serve --http`")

    @model_validator(mode="after")
    def _wait_beyond_lease(self) -> "Settings":
        if self.lock_wait_s <= self.lock_lease_s:
            raise ValueError(f"TRIMEM_LOCK_WAIT_S ({self.lock_wait_s:g}) must exceed "
                             f"TRIMEM_LOCK_LEASE_S ({self.lock_lease_s:g}): a lock whose holder "
                             "stopped is only taken over after the lease")
        return self

    def to_config(self):
        from ..tools.runtime import Config, Limits  # lazy: the tools layer, not in a hook

        limits = Limits(max_messages=self.max_messages, max_message_chars=self.max_message_chars,
                        max_call_chars=self.max_call_chars,
                        max_budget_tokens=self.max_budget_tokens)
        return Config(home=self.home, embedder=self.embedder, embed_model=self.embed_model,
                      embed_base_url=self.embed_base_url, embed_api_key=self.embed_api_key,
                      llm=self.llm, llm_model=self.llm_model, llm_base_url=self.llm_base_url,
                      llm_api_key=self.llm_api_key,
                      sampling_timeout_s=self.sampling_timeout_s,
                      vector_index_min_rows=self.vector_index_min_rows,
                      source_copy_max_rows=self.source_copy_max_rows,
                      max_ram_mb=self.max_ram_mb,
                      curation_delay_s=self.curation_delay_s, curation=self.curation,
                      consolidate_every_sessions=self.consolidate_every_sessions,
                      recall_log_days=self.recall_log_days, recall_log_max=self.recall_log_max,
                      recall_trace_max_bytes=self.recall_trace_max_bytes,
                      lock_wait_s=self.lock_wait_s, lock_lease_s=self.lock_lease_s, limits=limits)


SETTINGS_FILE = "settings.env"


def settings_file(env_file: str | os.PathLike | None = None) -> Path | None:
    """The one file settings are read from: ``env_file`` (or ``TRIMEM_ENV_FILE``), which must
    exist, else ``TRIMEM_HOME/settings.env`` when there is one (local homes only)."""
    explicit = env_file or os.environ.get("TRIMEM_ENV_FILE")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ValueError(f"settings file {path} (--env-file / TRIMEM_ENV_FILE) does not exist")
        return path
    home = os.environ.get("TRIMEM_HOME") or default_home()
    if "://" in home:
        return None
    path = Path(home).expanduser() / SETTINGS_FILE
    return path if path.is_file() else None


def load_settings(env_file: str | os.PathLike | None = None) -> Settings:
    """Settings from the environment over :func:`settings_file` (never a ``.env`` in the
    working directory)."""
    path = settings_file(env_file)
    try:
        if path is None:
            return Settings()
        # ``_env_file`` is an argument of BaseSettings.__init__, which pyright does not see (it
        # synthesises the constructor from the fields)
        if env_file or os.environ.get("TRIMEM_ENV_FILE"):
            return Settings(_env_file=path)  # pyright: ignore[reportCallIssue]
        # the home's own file cannot move the home elsewhere
        return Settings(_env_file=path, home=str(path.parent))  # pyright: ignore[reportCallIssue]
    except ValidationError as exc:
        raise SettingsError(exc) from None


class SettingsError(ValueError):
    """Settings that do not validate (a TRIMEM_ variable or a line of the settings file): one
    line per setting, instead of pydantic's report."""

    def __init__(self, exc):
        lines = []
        for e in exc.errors(include_url=False, include_input=False):
            field = ".".join(str(x) for x in e["loc"])
            msg = e["msg"].removeprefix("Value error, ")
            lines.append(f"TRIMEM_{field.upper()}: {msg}" if field else msg)
        super().__init__("bad settings (nothing was done): " + "; ".join(lines))
