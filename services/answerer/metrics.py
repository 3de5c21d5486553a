"""Answerer metrics. Labels are bounded; never a run id. Model calls are counted by
shared.llm.metrics."""

from prometheus_client import Counter

DRAFTS = Counter("pm_answerer_drafts_total", "Drafts handed to the verifier, by ending.", ["ending"])
