"""Planner metrics. Labels are bounded; never a run id. Model calls are counted by
shared.llm.metrics."""

from prometheus_client import Counter, Histogram

from pmsearch.shared.llm.metrics import declare_calls

STEPS = Counter("pm_planner_steps_total", "Planner steps (model rounds) by kind.", ["kind"])
ENDINGS = Counter("pm_planner_endings_total", "How the planner ended runs.", ["ending"])
STEPS_USED = Histogram("pm_run_steps_used", "Steps a run used.", buckets=(0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50))

declare_calls("decide", "search")  # the `stage` of each call_model here
