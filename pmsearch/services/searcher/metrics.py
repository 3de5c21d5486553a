"""Searcher metrics. Labels are bounded: tool names, modes, outcomes; never ids."""

from collections.abc import Callable, Iterator

from prometheus_client import REGISTRY, Counter, Histogram
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from pmsearch.shared.streams import LOOKUPS, QUERIES
from pmsearch.shared.streams import TOOLS as TOOLS_STREAM
from pmsearch.shared.tools import TOOLS

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

TOOL_CALLS = Counter("pm_searcher_tool_calls_total", "Tool calls run, by tool and result.", ["tool", "result"])
TOOL_SECONDS = Histogram("pm_searcher_tool_seconds", "Time to run one tool call.", ["tool"], buckets=BUCKETS)
WIDEN_ATTEMPTS = Counter("pm_widen_attempts_total", "Tool calls refused for trying to widen the scope.", ["tool"])
SCOPE_REFUSED = Counter("pm_scope_refused_total", "Messages refused for a missing, altered or expired scope token.", ["stream"])
SEARCHES = Counter("pm_searches_total", "Direct searches, by mode and result.", ["mode", "result"])
SEARCH_SECONDS = Histogram("pm_search_seconds", "Direct search time at the searcher.", ["mode"], buckets=BUCKETS)
INGESTED = Counter("pm_ingest_messages_total", "Messages offered for ingest, by status.", ["status"])
WITHDRAWN = Counter(
    "pm_ingest_withdrawn_total", "Deliveries removed because their mail server no longer holds the message there."
)
MESSAGE_ID_COLLISIONS = Counter(
    "pm_ingest_message_id_collisions_total",
    "Messages imported under a Message-ID their tenant already holds with other content (kept apart).",
)
EVIDENCE_STORED = Counter("pm_evidence_messages_total", "Messages newly stored as run evidence.")

# Series of every tool and stream exist from the start, so a first increase is a rate
# (and an alert) rather than a series appearing.
for _tool in TOOLS:
    WIDEN_ATTEMPTS.labels(_tool)
    TOOL_SECONDS.labels(_tool)
for _stream in (QUERIES, TOOLS_STREAM, LOOKUPS):
    SCOPE_REFUSED.labels(_stream)


class _QueryEmbeddingCache(Collector):
    """``pm_searcher_query_embedding_cache_total{result}``: query embeddings served from
    the cache (hit) or computed (miss), read from the cache at scrape time."""

    def __init__(self) -> None:
        self._counts: Callable[[], tuple[int, int]] = lambda: (0, 0)

    def watch(self, counts: Callable[[], tuple[int, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "pm_searcher_query_embedding_cache", "Query embeddings served from the cache or computed.", labels=["result"]
        )
        hits, misses = self._counts()
        family.add_metric(["hit"], hits)
        family.add_metric(["miss"], misses)
        yield family


QUERY_EMBEDDING_CACHE = _QueryEmbeddingCache()
REGISTRY.register(QUERY_EMBEDDING_CACHE)
