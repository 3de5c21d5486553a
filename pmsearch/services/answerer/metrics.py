"""Answerer metrics. Labels are bounded; never a run id. Model calls are counted by
shared.llm.metrics."""

from prometheus_client import Counter

from pmsearch.shared.llm.metrics import declare_calls

DRAFTS = Counter("pm_answerer_drafts_total", "Drafts handed to the verifier, by ending.", ["ending"])

declare_calls("answer")  # the `stage` of each call_model here
COMPLETIONS = Counter(
    "pm_answerer_completions_total",
    "Follow-up calls for a part of the question an answer left out, by which answer was kept.",
    ["kept"],
)
