"""Gateway metrics. Labels are bounded: route templates, modes, status classes."""

from prometheus_client import Counter, Gauge, Histogram

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2.5, 5, 8, 10, 15, 30, 60)

REQUESTS = Counter("pm_http_requests_total", "HTTP requests by route and status.", ["route", "status"])
REQUEST_SECONDS = Histogram("pm_http_request_seconds", "HTTP request time by route.", ["route"], buckets=BUCKETS)
SEARCHES = Counter("pm_gateway_searches_total", "Searches by mode and result.", ["mode", "result"])
CAP_REFUSED = Counter("pm_cap_refused_total", "Agentic runs refused because the tenant cap was spent.")
CAP_TAKEN = Counter("pm_cap_taken_total", "Units of tenant daily caps taken.")
CAP_USE_RATIO = Gauge("pm_cap_use_ratio", "Share of the daily cap used by the last admitted run's tenant.")
RUNS_STARTED = Counter("pm_runs_started_total", "Agentic runs admitted.")
WATCHDOG_ENDINGS = Counter("pm_watchdog_endings_total", "Runs the deadline watchdog asked the verifier to end.")
WATCHDOG_FAILURES = Counter("pm_watchdog_round_failures_total", "Watchdog rounds that failed (retried next round).")
# kind: waiting_runs | event_streams | direct_searches
ADMITTED = Gauge("pm_gateway_in_flight", "Requests holding a slot of this replica's capacity, by kind.", ["kind"])
OVERLOADED = Counter("pm_gateway_overloaded_total", "Requests refused with 503 because a capacity was full, by kind.", ["kind"])
CLIENT_GONE = Counter("pm_gateway_client_gone_total", "Waits stopped because the client disconnected, by kind.", ["kind"])
RUN_SECONDS = Histogram("pm_run_seconds", "Agentic run time seen by the caller, by outcome.", ["outcome"], buckets=BUCKETS)
FIRST_EVIDENCE_SECONDS = Histogram(
    "pm_first_evidence_seconds", "Time from admission to a run's first evidence event.", buckets=BUCKETS
)
