"""Every setting pmsearch reads, in one place. Environment variables carry the ``PM_``
prefix (``PM_REDIS_URL``, ``PM_MODEL_BASE_URL``, ...).

Each service gets its own class holding only what that service may know: the verifier's
settings have no model credentials, the gateway's have no Qdrant location.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict



class ServiceSettings(BaseSettings):
    """What every service process knows: its Redis user, logging, metrics."""

    model_config = SettingsConfigDict(env_prefix="PM_", extra="forbid", env_ignore_empty=True)

    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_username: str | None = None
    redis_password: SecretStr | None = None
    metrics_port: int | None = None
    log_level: str = "INFO"
    # Messages one worker handles at once per stream; model-calling stages mostly wait.
    worker_concurrency: int = 32


class ScopeKeySettings(ServiceSettings):
    scope_key: SecretStr = SecretStr("pmsearch-dev-scope-key-change-me")
    scope_ttl_seconds: int = 300


class SearcherSettings(ScopeKeySettings):
    data_dir: Path = Path("var/data")
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    collection: str = "pm_mail"
    embedding_backend: Literal["local", "openai"] = "local"
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    chunk_chars: int = 1200
    tool_concurrency: int = 8


class GatewaySettings(ScopeKeySettings):
    host: str = "127.0.0.1"
    port: int = 8080
    admin_token: SecretStr | None = None
    search_timeout_seconds: float = 10.0
    ingest_timeout_seconds: float = 300.0
    default_daily_cap: int = 500
    default_max_steps: int = 6
    default_max_seconds: float = 8.0
    deadline_grace_seconds: float = 1.5


class ModelSettings(ServiceSettings):
    model_base_url: str = "http://127.0.0.1:8090/v1"
    model_api_key: SecretStr | None = None
    agent_model: str = "@cf/qwen/qwen3.8-27b"
    model_output: Literal["json_schema", "json_object_schema", "tools"] = "json_schema"
    model_timeout_seconds: float = 30.0
    model_max_tokens: int = 512
    model_retries: int = 1
    breaker_failures: int = 3
    breaker_reset_seconds: float = 30.0
    model_connect_timeout_seconds: float = 5.0
    model_temperature: float = 0.0
    model_retry_wait_seconds: float = 0.25
    model_retry_wait_max_seconds: float = 2.0
    # The embedded default model, served on loopback by shared/llm/local_server.py.
    local_model_path: Path = Path("models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    local_model_ctx: int = 4096
    local_model_threads: int | None = None


class PlannerSettings(ModelSettings):
    pass


class AnswererSettings(ModelSettings):
    # Who picks each sentence's sources: "code" attributes them from the evidence (the
    # embedded model writes the right sentence but cites the wrong passages), "model"
    # keeps the model's own. `pmsearch eval` reports both for every answered run.
    citation_source: Literal["code", "model"] = "code"


class VerifierSettings(ServiceSettings):
    """No model credentials, by design: the verifier cannot call a model."""


@lru_cache
def searcher_settings() -> SearcherSettings:
    return SearcherSettings()


@lru_cache
def gateway_settings() -> GatewaySettings:
    return GatewaySettings()


@lru_cache
def planner_settings() -> PlannerSettings:
    return PlannerSettings()


@lru_cache
def answerer_settings() -> AnswererSettings:
    return AnswererSettings()


@lru_cache
def verifier_settings() -> VerifierSettings:
    return VerifierSettings()


class CliSettings(BaseSettings):
    """What the ``pmsearch`` command needs to reach a running stack."""

    model_config = SettingsConfigDict(env_prefix="PM_", extra="forbid", env_ignore_empty=True)

    gateway_url: str = "http://127.0.0.1:8080"
    admin_token: SecretStr | None = None
    api_key: SecretStr | None = None
    var_dir: Path = Path("var")
    redis_port: int = 6390
    gateway_port: int = 8080
    demo_dir: Path = Path("data/demo")
    # An external OpenAI-compatible model replaces the embedded one when set.
    model_base_url: str | None = None
    model_api_key: SecretStr | None = None
    agent_model: str | None = None
    model_output: str | None = None

    def model_env(self) -> dict[str, str]:
        """The model settings to hand to the planner and answerer processes."""
        values = {
            "PM_MODEL_BASE_URL": self.model_base_url,
            "PM_MODEL_API_KEY": self.model_api_key.get_secret_value() if self.model_api_key else None,
            "PM_AGENT_MODEL": self.agent_model,
            "PM_MODEL_OUTPUT": self.model_output,
        }
        return {k: v for k, v in values.items() if v}


def cli_settings() -> CliSettings:
    return CliSettings()
