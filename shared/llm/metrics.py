"""Model-call metrics, declared once for every stage that calls a model.

Labels are bounded: ``stage`` is a constant of the calling code (never a run id),
``result`` one of ok | invalid | unavailable | timeout, ``kind`` prompt | completion.
Recorded by :func:`shared.llm.bookkeeping.call_model` only.
"""

from prometheus_client import Counter, Histogram

SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 10, 15, 20, 30, 45, 60)

MODEL_CALLS = Counter("pm_model_calls_total", "Model calls by stage and result.", ["stage", "result"])
MODEL_SECONDS = Histogram(
    "pm_model_seconds", "Model call time by stage and result.", ["stage", "result"], buckets=SECONDS_BUCKETS
)
MODEL_TOKENS = Counter("pm_model_tokens_total", "Model tokens by stage and kind.", ["stage", "kind"])
