"""The one settings class. Read only here, in ``server/``; tools get plain values (Config)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_home() -> str:
    import platformdirs

    return platformdirs.user_data_dir("trimem", appauthor=False)


class Settings(BaseSettings):
    """Every option is an environment variable with the ``TRIMEM_`` prefix (or a .env file)."""

    model_config = SettingsConfigDict(env_prefix="TRIMEM_", env_file=".env", extra="ignore")

    home: str = Field(default_factory=default_home,
                      description="data folder or object-store URI (s3://bucket/trimem)")
    embedder: Literal["local", "openai"] = "local"
    embed_model: str | None = None
    embed_base_url: str | None = None
    embed_api_key: str | None = None
    llm: Literal["none", "openai", "sampling", "auto"] = Field(
        "auto", description="who writes curated memories and merge texts: none (heuristics), "
        "openai (an OpenAI-compatible endpoint, in the background), sampling (the host's own "
        "model, asked during `consolidate`), auto (sampling when the client offers it, else "
        "heuristics)")
    sampling_timeout_s: float = Field(120.0, gt=0, description="how long consolidate waits for "
                                      "the host's model over a 2025-11-25 back-channel")
    llm_model: str | None = None
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    cache_dir: Path | None = Field(None, description="where the built embedding model is cached")
    vector_index_min_rows: int = 10_000
    curation_delay_s: float = Field(0.0, description="curate a session once idle this long")
    curation: bool = Field(True, description="false: keep raw sources only (plain recall); "
                           "the paper strategies then have nothing curated to use")
    consolidate_every_sessions: int = Field(
        0, ge=0, description="consolidate a namespace after this many newly curated sessions "
        "(the paper suggests 10-20); 0 = only when asked (the consolidate tool or command)")
    max_messages: int = 1_000
    max_message_chars: int = 100_000
    max_budget_tokens: int = 100_000
    log_level: str = "WARNING"
    http_token: str | None = Field(None, description="bearer token for `serve --http`")
    http_allowed_hosts: list[str] = Field(default_factory=list,
                                          description="extra Host/Origin names for `serve --http`")

    def to_config(self):
        from ..tools.runtime import Config, Limits

        limits = Limits(max_messages=self.max_messages, max_message_chars=self.max_message_chars,
                        max_budget_tokens=self.max_budget_tokens)
        return Config(home=self.home, embedder=self.embedder, embed_model=self.embed_model,
                      embed_base_url=self.embed_base_url, embed_api_key=self.embed_api_key,
                      llm=self.llm, llm_model=self.llm_model, llm_base_url=self.llm_base_url,
                      llm_api_key=self.llm_api_key, cache_dir=self.cache_dir,
                      sampling_timeout_s=self.sampling_timeout_s,
                      vector_index_min_rows=self.vector_index_min_rows,
                      curation_delay_s=self.curation_delay_s, curation=self.curation,
                      consolidate_every_sessions=self.consolidate_every_sessions, limits=limits)
