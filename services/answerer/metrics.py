"""Answerer metrics. Labels are bounded; never a run id."""

from prometheus_client import Counter, Histogram

BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 10, 15, 20, 30, 45, 60)

MODEL_CALLS = Counter("pm_model_calls_total", "Model calls by stage and result.", ["stage", "result"])
MODEL_SECONDS = Histogram("pm_model_seconds", "Model call time by stage.", ["stage"], buckets=BUCKETS)
MODEL_TOKENS = Counter("pm_model_tokens_total", "Model tokens by stage and kind.", ["stage", "kind"])
DRAFTS = Counter("pm_answerer_drafts_total", "Drafts handed to the verifier, by ending.", ["ending"])
