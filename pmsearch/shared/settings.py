"""Every setting pmsearch reads, in one place. Environment variables carry the ``PM_``
prefix (``PM_REDIS_URL``, ``PM_MODEL_BASE_URL``, ...).

Each service gets its own class holding only what that service may know: the verifier's
settings have no model credentials, the gateway's have no Qdrant location. What the
model stages tell their model is set apart, beside its texts (``PM_PROMPT_*``,
:class:`pmsearch.shared.prompts.PromptSettings`), so the verifier never imports prompt code.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from pmsearch.shared.messages import AnswerStyle

# Shared secrets (scope key, admin token) must be long and not one anyone has seen.
MIN_SECRET_BYTES = 32
KNOWN_DEV_SECRETS = frozenset({"pmsearch-dev-scope-key-change-me"})
# Gateway connections kept free of long waits, for keys, limits and publishing.
GATEWAY_POOL_RESERVE = 16


def strong_secret(value: SecretStr) -> SecretStr:
    raw = value.get_secret_value()
    low = raw.lower()
    if raw in KNOWN_DEV_SECRETS or any(p in low for p in ("change-me", "changeme", "change_me")):
        raise ValueError("is a published placeholder; generate one (`pmsearch acl` writes fresh secrets to .env)")
    if len(raw.encode()) < MIN_SECRET_BYTES:
        raise ValueError(f"must be at least {MIN_SECRET_BYTES} bytes; generate one (`pmsearch acl` writes fresh secrets to .env)")
    return value



class ServiceSettings(BaseSettings):
    """What every service process knows: its Redis user, logging, metrics."""

    model_config = SettingsConfigDict(env_prefix="PM_", extra="forbid", env_ignore_empty=True)

    @field_validator("redis_sentinels")
    @classmethod
    def _sentinel_addresses(cls, value: str) -> str:
        for entry in filter(None, (e.strip() for e in value.split(","))):
            host, _, port = entry.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"{entry!r} is not host:port")
        return value

    def sentinel_addresses(self) -> list[tuple[str, int]]:
        """The sentinels as (host, port); empty without Sentinel."""
        entries = [e.strip() for e in self.redis_sentinels.split(",") if e.strip()]
        return [(host, int(port)) for host, _, port in (e.rpartition(":") for e in entries)]

    def result_replicas(self) -> int:
        if self.redis_result_replicas is not None:
            return self.redis_result_replicas
        return 1 if self.redis_sentinels else 0

    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_username: str | None = None
    redis_password: SecretStr | None = None
    # Redis Sentinel (docs/scale.md): "host:port,host:port,..." of the sentinels; set, the
    # primary of redis_sentinel_master is asked of them for every new connection, and
    # redis_url gives only the database number. The sentinels' own login, for asking.
    redis_sentinels: str = ""
    redis_sentinel_master: str = "pmsearch"
    redis_sentinel_username: str | None = None
    redis_sentinel_password: SecretStr | None = None
    # Redis Cluster (docs/scale.md): redis_url names any one primary; the client learns
    # the others and each slot's owner from it. Pair it with stream_partitions, or each
    # stage's queue stays on one primary.
    redis_cluster: bool = False
    # Replicas a run's result must reach (Redis WAIT) before the run is announced done and
    # a client may read it; until then the verifier retries. Unset: 1 with Sentinel (a
    # failover must not lose a result a client has read), 0 without (a lone server has
    # none to wait for). 0 with Sentinel prefers answering to that guarantee.
    redis_result_replicas: int | None = Field(default=None, ge=0)
    # Connections one Redis client may open (pmsearch/shared/bus.py connect); past them a command
    # waits for a free one rather than failing.
    redis_max_connections: int = Field(default=100, ge=4)
    # The worker's operator port (/metrics, /healthz, /readyz: pmsearch/shared/health.py); the
    # gateway serves them on its own port. 0.0.0.0 in a container, so Prometheus and the
    # orchestrator's probes reach it from outside.
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = None
    log_level: str = "INFO"
    # One JSON object a line for collectors (pmsearch/shared/logging_setup.py); "text" for reading by eye.
    log_format: Literal["json", "text"] = "json"
    # Keys each stage's input stream is split into (docs/scale.md, "Partitioned streams"):
    # more than 1 spreads a stage's queue over a Redis Cluster's primaries. The same in
    # every process of a deployment; changed only with the stages stopped and drained.
    stream_partitions: int = Field(default=1, ge=1, le=64)
    # Messages one worker handles at once per stream; model-calling stages mostly wait.
    worker_concurrency: int = 32
    # The worker runtime (pmsearch/shared/worker.py). An entry idle this long is taken over by
    # another consumer: its own died, since a live handler heartbeats its entry every
    # worker_heartbeat_seconds. An entry Redis delivered worker_max_deliveries times
    # without an acknowledgement goes to the dead-letter stream, whatever ended each try.
    worker_reclaim_idle_seconds: float = Field(default=5.0, gt=0)
    worker_heartbeat_seconds: float = Field(default=1.0, gt=0)
    worker_max_deliveries: int = Field(default=5, ge=1)
    # Most entries one read takes (never more than free handler slots), so replicas share a burst.
    worker_read_count: int = Field(default=8, ge=1)
    # How long a finished run (its record, result with trace, evidence summaries) stays
    # readable; working data (evidence bodies, progress) expires minutes after the deadline.
    run_retention_days: float = Field(default=30.0, gt=0)

    @model_validator(mode="after")
    def _one_redis_topology(self) -> ServiceSettings:
        if self.redis_cluster and self.redis_sentinels:
            raise ValueError("PM_REDIS_CLUSTER and PM_REDIS_SENTINELS exclude each other: a cluster fails over by itself")
        if self.redis_cluster and self.redis_result_replicas:
            # A keyless WAIT in a cluster pipeline goes to any node, not the result's own.
            raise ValueError("PM_REDIS_RESULT_REPLICAS is not supported with PM_REDIS_CLUSTER yet; leave it unset or 0")
        return self

    @model_validator(mode="after")
    def _heartbeat_within_reclaim(self) -> ServiceSettings:
        # Two heartbeats per idle period: one late beat must not hand live work away.
        if self.worker_heartbeat_seconds * 2 > self.worker_reclaim_idle_seconds:
            raise ValueError("PM_WORKER_HEARTBEAT_SECONDS must be at most half of PM_WORKER_RECLAIM_IDLE_SECONDS")
        return self


class ScopeKeySettings(ServiceSettings):
    # No default: a service that signs or checks scope tokens refuses to start without one.
    scope_key: SecretStr
    scope_ttl_seconds: int = 300

    _strong_scope_key = field_validator("scope_key")(strong_secret)


class SearcherSettings(ScopeKeySettings):
    data_dir: Path = Path("var/data")
    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None
    collection: str = "pm_mail"
    # A Qdrant cluster (docs/scale.md): how a new collection is laid out across its nodes.
    # Shards (per tenant key when sharded by tenant) and copies of each; unset, the
    # server's defaults. By tenant, every tenant's points live in shards of its own
    # (custom shard keys), which the cluster can place and move one tenant at a time.
    qdrant_shards: int | None = Field(default=None, ge=1)
    qdrant_replication: int | None = Field(default=None, ge=1)
    qdrant_shard_by_tenant: bool = False
    # onnx: int8 MiniLM on onnxruntime (the default, no PyTorch); torch: the same model on
    # sentence-transformers (the '.[torch]' extra); openai: a remote /embeddings endpoint;
    # use / e5: multilingual USE v3 / multilingual-e5-small, bundled in their packages
    # (pmsearch/services/searcher/multilingual_embedder.py).
    # "local" is the torch backend's name in indexes written before onnx existed.
    embedding_backend: Literal["onnx", "torch", "openai", "use", "e5", "local"] = "onnx"
    embedding_model: str = "all-MiniLM-L6-v2"
    # Where the onnx backend keeps the model file it prepares once from the packaged one.
    embedding_cache_dir: Path = Path("var/models")
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    chunk_chars: int = 1200
    tool_concurrency: int = 8
    # Query texts whose embedding is kept (pmsearch/services/searcher/query_cache.py); 0: none.
    query_embedding_cache_size: int = Field(default=256, ge=0)
    # Ingest limits per message (pmsearch/services/searcher/ingest/limits.py, docs/design.md):
    # refused over the size, parse time or memory; cut, with a note, over the others.
    ingest_max_message_bytes: int = Field(default=25 * 1024 * 1024, ge=1024)
    ingest_max_attachments: int = Field(default=50, ge=0)
    ingest_max_text_chars: int = Field(default=2_000_000, ge=1000)
    ingest_max_chunks: int = Field(default=200, ge=1)
    extract_timeout_seconds: float = Field(default=10.0, gt=0)
    ingest_parse_timeout_seconds: float = Field(default=30.0, gt=0)
    ingest_parse_memory_mb: int = Field(default=1024, ge=128)
    ingest_max_date_skew_seconds: float = Field(default=86_400.0, ge=0)
    # Characters of one message a run reads (pmsearch/services/searcher/repository.py bounded).
    evidence_max_chars: int = Field(default=32_000, ge=1000)
    # The authserv-ids whose Authentication-Results headers are believed, comma-separated
    # (pmsearch/services/searcher/ingest/authentication.py): the receiving MTA's name. None: every
    # sender is "none", neither authenticated nor failed.
    trusted_authserv_ids: str = ""

    @property
    def trusted_authserv(self) -> tuple[str, ...]:
        return tuple(t.strip() for t in self.trusted_authserv_ids.split(",") if t.strip())

    @field_validator("embedding_backend")
    @classmethod
    def _legacy_backend(cls, value: str) -> str:
        return "torch" if value == "local" else value


class GatewaySettings(ScopeKeySettings):
    host: str = "127.0.0.1"
    port: int = 8080
    admin_token: SecretStr
    search_timeout_seconds: float = 10.0
    ingest_timeout_seconds: float = 300.0
    default_daily_cap: int = 500
    default_max_steps: int = 6
    default_max_seconds: float = 8.0
    # How answers are made unless a tenant's settings say otherwise ("answer.style"):
    # "write", the model's sentences, "extract", the mail's sentences it chooses, or
    # "write_or_extract", the model's sentences where the mail bears them out.
    answer_style: AnswerStyle = "write"
    deadline_grace_seconds: float = 1.5
    # Request limits (pmsearch/services/gateway/limits.py, docs/design.md). A body over its
    # limit is refused with 413 before it is read; only a request carrying the admin
    # token may send an ingest-sized body, and only to the ingest endpoint.
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_ingest_body_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    # Plain (keyword, semantic, hybrid) searches per API key per minute; 0 = no limit.
    search_rate_per_minute: int = Field(default=120, ge=0)
    # Wrong credentials one client address may send per minute before it is refused
    # unread (pmsearch/services/gateway/auth_throttle.py); 0 = no limit.
    auth_failures_per_minute: int = Field(default=30, ge=0)
    # Agentic runs (SSE or waiting) and event streams one API key may hold open at once.
    max_streams_per_key: int = Field(default=4, ge=1)
    # A stream's slot lives this long unless renewed, so a crashed replica's slots free up.
    stream_lease_seconds: float = Field(default=30.0, gt=1)
    # This replica's own capacity (pmsearch/services/gateway/admission.py): each synchronous run
    # wait, event stream and direct search holds a Redis connection while it lasts, so
    # together they stay below PM_REDIS_MAX_CONNECTIONS; past a limit the gateway
    # answers 503 with Retry-After. The watchdog and /healthz have their own connections.
    redis_max_connections: int = Field(default=256, ge=8)
    redis_pool_timeout_seconds: float = Field(default=2.0, gt=0)
    max_waiting_runs: int = Field(default=96, ge=1)
    max_event_streams: int = Field(default=96, ge=1)
    max_direct_searches: int = Field(default=48, ge=1)
    # The part of each of those a single tenant may hold (pmsearch/services/gateway/admission.py):
    # one tenant's keys cannot take every slot from the others. 1.0 for one tenant only.
    tenant_share: float = Field(default=0.5, gt=0, le=1)

    @model_validator(mode="after")
    def _capacity_fits_the_pool(self) -> GatewaySettings:
        held = self.max_waiting_runs + self.max_event_streams + self.max_direct_searches
        if held + GATEWAY_POOL_RESERVE > self.redis_max_connections:
            raise ValueError(
                f"PM_MAX_WAITING_RUNS + PM_MAX_EVENT_STREAMS + PM_MAX_DIRECT_SEARCHES ({held}) plus "
                f"{GATEWAY_POOL_RESERVE} for short commands exceed PM_REDIS_MAX_CONNECTIONS "
                f"({self.redis_max_connections})"
            )
        return self

    _strong_admin_token = field_validator("admin_token")(strong_secret)


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
    # Model calls one process has in flight at once; more wait for a turn (inside their
    # deadline) rather than pile onto a busy endpoint and time out.
    model_max_concurrency: int = Field(default=16, ge=1)
    model_connect_timeout_seconds: float = 5.0
    model_temperature: float = 0.0
    model_retry_wait_seconds: float = 0.25
    model_retry_wait_max_seconds: float = 2.0


class PlannerSettings(ModelSettings):
    # An extract-style choice whose sentences, with their passages, hold less than this
    # share of the question's weighted words (pmsearch.shared.extracts.coverage) is no
    # answer: a search round follows, or the run ends unanswered. 0 takes every choice;
    # the default is calibrated on the real set's dev half (docs/evaluation.md).
    extract_min_coverage: float = Field(default=0.3, ge=0.0, le=1.0)


class AnswererSettings(ModelSettings):
    # Who picks each sentence's sources: "code" attributes them from the evidence (the
    # embedded model writes the right sentence but cites the wrong passages), "model"
    # keeps the model's own. `pmsearch eval` reports both for every answered run.
    citation_source: Literal["code", "model"] = "code"


class VerifierSettings(ServiceSettings):
    """No model credentials, by design: the verifier cannot call a model."""


class SyncSettings(ServiceSettings):
    """The sync stage (pmsearch/services/sync): which mailboxes to keep current, and its bounds.
    Credentials are never settings: the file names where each is read from."""

    # The YAML file of IMAP sources and LMTP recipients (docs/design.md, "Mail arrives
    # by itself"); without one the stage syncs nothing and says so.
    sync_config: Path | None = None
    # A message larger than this is not fetched (counted, logged by UID); as for ingest.
    sync_max_message_bytes: int = Field(default=25 * 1024 * 1024, ge=1024)
    # Messages sent to the searcher in one ingest request.
    sync_batch: int = Field(default=20, ge=1, le=500)
    # How long one ingest request may take before the folder's sync is tried again.
    sync_ingest_timeout_seconds: float = Field(default=300.0, gt=0)
    # Waits after a failed connection or login: doubling from the first to the last.
    sync_backoff_first_seconds: float = Field(default=5.0, gt=0)
    sync_backoff_max_seconds: float = Field(default=900.0, gt=0)
    # The LMTP listener (off without a port) and the most bytes one DATA may carry.
    lmtp_host: str = "127.0.0.1"
    lmtp_port: int | None = None
    lmtp_max_message_bytes: int = Field(default=25 * 1024 * 1024, ge=1024)


S = TypeVar("S", bound=BaseSettings)


def load(cls: type[S]) -> S:
    """A service's settings, or exit with one readable line naming the bad variables."""
    prefix = cls.model_config.get("env_prefix", "PM_")
    try:
        return cls()
    except ValidationError as exc:
        problems = "; ".join(
            (f"{prefix}{'_'.join(str(p) for p in e['loc']).upper()} " if e["loc"] else "")
            + ("is not set" if e["type"] == "missing" else e["msg"].removeprefix("Value error, "))
            for e in exc.errors()
        )
        raise SystemExit(f"pmsearch {cls.__name__.removesuffix('Settings').lower()}: cannot start: {problems}") from None


@lru_cache
def sync_settings() -> SyncSettings:
    return load(SyncSettings)


@lru_cache
def searcher_settings() -> SearcherSettings:
    return load(SearcherSettings)


@lru_cache
def gateway_settings() -> GatewaySettings:
    return load(GatewaySettings)


@lru_cache
def planner_settings() -> PlannerSettings:
    return load(PlannerSettings)


@lru_cache
def answerer_settings() -> AnswererSettings:
    return load(AnswererSettings)


@lru_cache
def verifier_settings() -> VerifierSettings:
    return load(VerifierSettings)


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
    # IMAP sources and LMTP recipients (pmsearch/services/sync): with a file, `pmsearch up` also
    # runs the sync stage, and `pmsearch sync once` reads it.
    sync_config: Path | None = None
    # `pmsearch ingest` sends batches of at most 50 messages and this many raw bytes
    # (base64 makes the request a third larger; keep it under PM_MAX_INGEST_BODY_BYTES),
    # and skips messages over the searcher's own limit (the same variable) unsent.
    ingest_batch_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    ingest_max_message_bytes: int = Field(default=25 * 1024 * 1024, ge=1024)
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
