"""Gateway metrics. Labels are bounded: route templates, modes, status classes."""

from typing import get_args

from prometheus_client import Counter, Gauge, Histogram

from pmsearch.shared.messages import Outcome

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2.5, 5, 8, 10, 15, 30, 60)

REQUESTS = Counter("pm_http_requests_total", "HTTP requests by route and status.", ["route", "status"])
REQUEST_SECONDS = Histogram("pm_http_request_seconds", "HTTP request time by route.", ["route"], buckets=BUCKETS)
SEARCHES = Counter("pm_gateway_searches_total", "Searches by mode and result.", ["mode", "result"])
AUTH_THROTTLED = Counter(
    "pm_gateway_auth_throttled_total", "Requests refused unread after too many wrong credentials from their address."
)
CAP_REFUSED = Counter("pm_cap_refused_total", "Agentic runs refused because the tenant cap was spent.")
CAP_TAKEN = Counter("pm_cap_taken_total", "Units of tenant daily caps taken.")
# Cap use per tenant without a tenant label (tenants are unbounded): each admission
# observes its tenant's share of the daily cap used, this run included. The share of
# admissions above 0.9 says how much traffic comes from tenants near their cap.
CAP_USE_RATIO = Histogram(
    "pm_cap_use_ratio", "Share of its daily cap the admitted run's tenant has used, at each admission.",
    buckets=(0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0),
)
RUNS_STARTED = Counter("pm_runs_started_total", "Agentic runs admitted.")
RUNS_FOLLOWED = Counter(
    "pm_runs_followed_total", "Agentic requests answered with the run an earlier request of the same Idempotency-Key started."
)
RUNS_RESUMED = Counter(
    "pm_runs_resumed_total",
    "Runs recorded by a request whose admission failed before marking them started, started by the same request sent again.",
)
WATCHDOG_ENDINGS = Counter("pm_watchdog_endings_total", "Runs the deadline watchdog asked the verifier to end.")
WATCHDOG_WAITS = Counter(
    "pm_watchdog_waits_total", "Looks at an overdue run whose draft was on its way, so the watchdog waited for it."
)
WATCHDOG_FAILURES = Counter("pm_watchdog_round_failures_total", "Watchdog rounds that failed (retried next round).")
# kind: waiting_runs | event_streams | direct_searches
ADMITTED = Gauge("pm_gateway_in_flight", "Requests holding a slot of this replica's capacity, by kind.", ["kind"])
OVERLOADED = Counter("pm_gateway_overloaded_total", "Requests refused with 503 because a capacity was full, by kind.", ["kind"])
TENANT_BUSY = Counter(
    "pm_gateway_tenant_busy_total", "Requests refused with 429 because their tenant held its share, by kind.", ["kind"]
)
STORE_FULL = Counter("pm_gateway_store_full_total", "Requests refused with 503 because Redis was at its maxmemory.")
CLIENT_GONE = Counter("pm_gateway_client_gone_total", "Waits stopped because the client disconnected, by kind.", ["kind"])
RUN_SECONDS = Histogram("pm_run_seconds", "Agentic run time seen by the caller, by outcome.", ["outcome"], buckets=BUCKETS)
FIRST_EVIDENCE_SECONDS = Histogram(
    "pm_first_evidence_seconds", "Time from admission to a run's first evidence event.", buckets=BUCKETS
)
# tool: search | ask | get_run | read_message | unknown; result: ok or an error code
MCP_TOOL_CALLS = Counter("pm_mcp_tool_calls_total", "MCP tool calls by tool and result.", ["tool", "result"])

# Every outcome's series exists from the start: one born at its first run would hide
# that run from rate().
for _outcome in get_args(Outcome):
    RUN_SECONDS.labels(_outcome)
