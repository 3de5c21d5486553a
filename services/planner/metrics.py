"""Planner metrics. Labels are bounded; never a run id."""

from prometheus_client import Counter, Histogram

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 10, 15, 20, 30, 45, 60)

STEPS = Counter("pm_planner_steps_total", "Planner steps (model rounds) by kind.", ["kind"])
MODEL_CALLS = Counter("pm_model_calls_total", "Model calls by stage and result.", ["stage", "result"])
MODEL_SECONDS = Histogram("pm_model_seconds", "Model call time by stage.", ["stage"], buckets=BUCKETS)
MODEL_TOKENS = Counter("pm_model_tokens_total", "Model tokens by stage and kind.", ["stage", "kind"])
ENDINGS = Counter("pm_planner_endings_total", "How the planner ended runs.", ["ending"])
STEPS_USED = Histogram("pm_run_steps_used", "Steps a run used.", buckets=(0, 1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50))
