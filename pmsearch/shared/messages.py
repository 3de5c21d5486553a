"""Message contracts: one pydantic model per stream, named for what happened.

Every message carries ``run_id`` (or a request id), ``tenant_id``, the signed scope token
and a deadline (Unix seconds). Models forbid unknown fields, so a message that does not
match its contract is refused rather than half-understood.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCHEMA_VERSION = 1

SearchMode = Literal["keyword", "semantic", "hybrid"]
Strategy = Literal["loop", "single_shot"]
# How an answer is made: the model writes sentences ("write"), or it chooses sentences
# of the mail that code quotes word for word ("extract"; a small model reads better
# than it writes), or it writes and a sentence the verifier would remove, or whose
# words its sources do not all hold, gives way to the mail's sentence it was made from
# ("write_or_extract").
AnswerStyle = Literal["write", "extract", "write_or_extract"]
Outcome = Literal["answered", "insufficient_evidence", "budget_exhausted", "degraded", "cancelled"]
# "cancelled": only the gateway asks for it, and only for a run its owner cancelled (RunMeta.cancelled_at).
Ending = Literal["answer", "insufficient_evidence", "budget_exhausted", "degraded", "cancelled"]
# "restates_question" is no longer given (its rule did not pay, docs/evaluation.md); it
# stays for the results stored while it was.
RemovalReason = Literal[
    "no_citation", "unknown_citation", "quote_not_found", "empty_sentence", "malformed",
    "figure_not_found", "unsupported_claim", "off_question", "restates_question", "asked_figure_missing",
    "answer_removed", "superseded", "contradictory",
]
# Why a run ended unanswered: fixed codes the verifier chooses from facts it checked,
# never text a stage or a model wrote (that is ``RunResult.model_note`` at most).
ReasonCode = Literal[
    "time_budget_spent", "step_budget_spent", "model_unavailable", "nothing_found",
    "no_answer_found", "all_sentences_removed", "empty_draft", "cancelled", "evidence_expired",
]
REASONS: dict[str, str] = {
    "time_budget_spent": "the time budget ran out",
    "step_budget_spent": "the step budget ran out",
    "model_unavailable": "the model was unavailable; hits are the question's own search",
    "nothing_found": "nothing in the caller's mail matched the question",
    "no_answer_found": "the mail found does not answer the question",
    "all_sentences_removed": "every sentence of the draft failed verification",
    "empty_draft": "the draft had no sentences",
    "cancelled": "the run was cancelled by its owner",
    "evidence_expired": "the answer came after the run's evidence expired, so it could not be verified",
}


class Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


class Envelope(Contract):
    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str
    tenant_id: str
    scope_token: str
    deadline: float


# ---------------------------------------------------------------- search results


class Hit(Contract):
    """One message found by a search, best chunk first."""

    message_id: str
    thread_id: str
    mailbox: str
    sender: str
    date: datetime | None
    subject: str
    snippet: str = Field(
        description="An HTML fragment: the mail text HTML-escaped, the query's terms in <mark>, no other tag. "
        "Every other text field (here and in runs) is plain text."
    )
    score: float
    folder: str = ""
    has_attachments: bool = False


class EvidenceAttachment(Contract):
    name: str
    text: str


class EvidenceMessage(Contract):
    """A message as the searcher stored it in a run's evidence: the source the verifier
    checks quotes against and copies excerpts from."""

    message_id: str
    tenant_id: str
    thread_id: str
    mailbox: str
    sender: str
    recipients: list[str] = Field(default_factory=list)
    date: datetime | None
    subject: str
    body: str
    attachments: list[EvidenceAttachment] = Field(default_factory=list)
    snippet: str = ""
    # Whether a trusted MTA authenticated the sender (DKIM/DMARC by Authentication-Results).
    sender_auth: Literal["pass", "fail", "none"] = "none"
    # The stored message is longer than a run's evidence holds (PM_EVIDENCE_MAX_CHARS):
    # what is here is its beginning, so offsets into it are offsets into the message.
    truncated: bool = False


class EvidenceSummary(Contract):
    """What a finished run says about each evidence message."""

    message_id: str
    thread_id: str
    sender: str
    date: datetime | None
    subject: str
    snippet: str
    sender_auth: Literal["pass", "fail", "none"] = Field(
        default="none",
        description="Whether a trusted mail server authenticated the sender (DKIM/DMARC): pass, fail, or none "
                    "(no trusted result). An unauthenticated From can be forged.",
    )

    @classmethod
    def of(cls, message: EvidenceMessage, snippet: str) -> EvidenceSummary:
        return cls(
            message_id=message.message_id, thread_id=message.thread_id, sender=message.sender,
            date=message.date, subject=message.subject, snippet=snippet, sender_auth=message.sender_auth,
        )


# ---------------------------------------------------------------- tools
#
# What a tool returns: one model per shape, told apart by ``kind``. The registry in
# pmsearch/shared/tools.py says which tool returns which; they live here because ToolOutcome
# carries them on the observations stream.


class MessageView(Contract):
    """One message as a tool shows it: headers, body and attachment names."""

    message_id: str
    thread_id: str
    mailbox: str
    folder: str
    sender: str
    recipients: list[str]
    date: datetime | None
    subject: str
    attachment_names: list[str]
    body: str


class AttachmentView(Contract):
    """The extracted text of one attachment."""

    message_id: str
    name: str
    text: str


class Contact(Contract):
    """A person in the mail and how many messages involve them."""

    address: str
    name: str
    messages: int


class HitsResult(Contract):
    """Messages found by a search, best first. ``latest`` holds the newest messages of
    the top hits' threads that are not hits themselves (search's ``thread_latest``)."""

    kind: Literal["hits"] = "hits"
    hits: list[Hit]
    latest: list[MessageView] = Field(default_factory=list)


class MessagesResult(Contract):
    """Whole messages (one for read_message, a thread's for read_thread), oldest first."""

    kind: Literal["messages"] = "messages"
    messages: list[MessageView]


class AttachmentsResult(Contract):
    kind: Literal["attachments"] = "attachments"
    attachments: list[AttachmentView]


class ContactsResult(Contract):
    kind: Literal["contacts"] = "contacts"
    contacts: list[Contact]


ToolOutput = Annotated[
    HitsResult | MessagesResult | AttachmentsResult | ContactsResult, Field(discriminator="kind")
]


# Text a model wrote, or a stage acting on its output, outside the verified answer: the
# verifier bounds it and drops paragraphs that steer, but never checks it against mail.
UNVERIFIED = "Unverified: written by a model or by a stage acting on its output; not checked against the mail."


class ToolCall(Contract):
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict, description=UNVERIFIED)


class ToolOutcome(Contract):
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(description=UNVERIFIED)
    ok: bool
    error: str | None = None
    error_code: str | None = None
    widen_attempt: bool = False
    duration_ms: float = 0.0
    message_ids: list[str] = Field(default_factory=list)
    output: ToolOutput | None = None


class ToolBatchRequested(Envelope):
    step: int
    calls: list[ToolCall]


class ToolBatchCompleted(Envelope):
    step: int
    outcomes: list[ToolOutcome]


# ---------------------------------------------------------------- direct calls


class SearchRequested(Contract):
    schema_version: Literal[1] = SCHEMA_VERSION
    request_id: str
    tenant_id: str
    scope_token: str
    deadline: float
    query: str
    mode: SearchMode
    filters: dict[str, Any] = Field(default_factory=dict)
    limit: int = 10


class SearchReplied(Contract):
    request_id: str
    ok: bool
    hits: list[Hit] = Field(default_factory=list)
    error: str | None = None
    error_code: str | None = None
    status: int = 200
    widen_attempt: bool = False
    took_ms: float = 0.0


class LookupRequested(Contract):
    """A read-only tool call outside any run (the MCP ``read_message`` tool): the
    searcher runs it inside the signed scope and replies like a direct search."""

    schema_version: Literal[1] = SCHEMA_VERSION
    request_id: str
    tenant_id: str
    scope_token: str
    deadline: float
    tool: Literal["read_message"]
    arguments: dict[str, Any] = Field(default_factory=dict)


class LookupReplied(Contract):
    request_id: str
    outcome: ToolOutcome | None = None  # None: the scope was refused (``error``)
    error: str | None = None
    error_code: str | None = None
    status: int = 200


class IngestRequested(Contract):
    schema_version: Literal[1] = SCHEMA_VERSION
    request_id: str
    tenant_id: str
    mailbox: str
    folder: str = "INBOX"
    raw: list[str]  # RFC 822 messages, base64


class DeliveryWithdrawn(Contract):
    """Messages no longer in a mailbox's folder on its mail server (expunged, or moved to
    another folder): that delivery is removed from each. A message with no delivery
    left is found by no search; one moved is the same message with its new delivery."""

    schema_version: Literal[1] = SCHEMA_VERSION
    tenant_id: str
    mailbox: str
    folder: str
    message_ids: list[str] = Field(max_length=1000)


class IngestItem(Contract):
    """One message's outcome. ``duplicate``: that content was indexed already (a new
    mailbox or folder it was delivered to is recorded on it)."""

    index: int
    status: Literal["indexed", "duplicate", "error"]
    message_id: str | None = None
    error: str | None = None
    # Indexed as a message of its own although the tenant has other content under the
    # same Message-ID (a resend with edits, or a forgery).
    collision: bool = False
    # What an ingest limit cut from an imported message, one line each (docs/design.md).
    notes: list[str] = Field(default_factory=list)


class IngestReplied(Contract):
    request_id: str
    items: list[IngestItem]
    # The index the batch went into (pmsearch/services/searcher/index/layout.py INDEX_ID_FIELD).
    index_id: str | None = None


# ---------------------------------------------------------------- runs


class Usage(Contract):
    steps: int = 0
    seconds: float = 0.0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class StepTrace(Contract):
    step: int
    kind: str
    tool_calls: list[ToolOutcome] = Field(default_factory=list)
    duration_ms: float = 0.0
    model_usage: Usage | None = None
    note: str | None = Field(default=None, description=UNVERIFIED)
    # The answer step's citations as the model gave them and as code attributed them
    # (message ids), so an evaluation can compare the two.
    cited_by_model: list[str] = Field(default_factory=list)
    cited_by_code: list[str] = Field(default_factory=list)


class WidenAttempt(Contract):
    step: int
    tool: str
    call_id: str
    reason: str
    detail: str = Field(description=UNVERIFIED)


class RemovedSentence(Contract):
    # The draft's sentence as the verifier removed it: what failed, never a fact.
    text: str = Field(description=UNVERIFIED + " Removed by verification.")
    reason: RemovalReason
    offending: str | None = None
    replaced: bool = Field(
        default=False,
        description="The sentence of the mail it was made from, quoted word for word, stands in its place "
        '(answer style "write_or_extract").',
    )


class Trace(Contract):
    steps: list[StepTrace] = Field(default_factory=list)
    searched: list[ToolCall] = Field(default_factory=list)
    removed_sentences: list[RemovedSentence] = Field(default_factory=list)
    widen_attempts: list[WidenAttempt] = Field(default_factory=list)


class SourceSentence(Contract):
    """A sentence of the mail as code quoted it (who wrote it, when, the words), cited
    to its message."""

    text: str
    citations: list[str] = Field(min_length=1, max_length=1)


class DraftSentence(Contract):
    text: str
    citations: list[str] = Field(default_factory=list)
    # Set by code on a source's sentence it adds for the details an earlier sentence
    # leaves out: the index of that sentence. Without it the detail answers nothing, so
    # the verifier removes it with that sentence (``answer_removed``).
    completes: int | None = Field(default=None, ge=0)
    # Set by code on a later sentence the model wrote after the answer (sentence 0): what
    # it adds rests on the answer, so the verifier removes it when that goes
    # (``answer_removed``), but it is checked against the question like the answer.
    follows: int | None = Field(default=None, ge=0)
    # Set by code on a sentence the model wrote (answer style ``write_or_extract``): the
    # sentence of a cited message it was made from, as a statement of the mail. The
    # verifier keeps it in the written sentence's place where it would remove that one
    # for what it claims, or where that one says words its sources do not hold.
    fallback: SourceSentence | None = None


class Draft(Contract):
    """What the answerer wrote. Either free text with ``[id]`` markers, or structured
    sentences; the verifier re-splits both itself."""

    text: str | None = None
    sentences: list[DraftSentence] | None = None
    style: AnswerStyle = "write"


class RunRequested(Envelope):
    question: str
    max_steps: int
    max_seconds: float
    started_at: float
    strategy: Strategy = "loop"
    answer_style: AnswerStyle = "write"


class CarriedSentence(Contract):
    """One sentence of a model's answer as it wrote it: its text and the labels of the
    passages it cites (``P2``)."""

    text: str
    passages: list[str] = Field(default_factory=list)


class CarriedAnswer(Contract):
    """The answer the planner's answer attempt carried, as its model wrote it, and what
    continuing that conversation takes: the fence's marker and the search notes its
    prompt showed (the passages the answerer rebuilds from the run's evidence)."""

    sentences: list[CarriedSentence] = Field(min_length=1)
    # Each passage label shown to the message it stood for, so the answerer reads the
    # labels without building the passages again (it does only to continue the talk).
    labels: dict[str, str] = Field(default_factory=dict)
    fence: str
    notes: list[str] = Field(default_factory=list)


class ChosenSentence(Contract):
    """One sentence of the passages as code showed it under a label, chosen by the
    model: the mail's words, never the model's."""

    message_id: str
    part: str  # the passage part it came from ("body", "quoted:...", "attachment:<name>", ...)
    text: str


class CarriedChoice(Contract):
    """The sentences an extract-style answer attempt chose, in the order shown."""

    sentences: list[ChosenSentence] = Field(min_length=1)


class AnswerRequested(Envelope):
    question: str
    step: int
    trace: Trace
    usage: Usage
    focus: list[str] = Field(default_factory=list)  # evidence ids, most relevant first
    found_later: list[str] = Field(default_factory=list)  # shown first (see pmsearch.shared.passages.build)
    hits: list[Hit] = Field(default_factory=list)  # the question's own search, for degraded
    # The answer the planner's answer attempt carried; None when the answerer is to
    # write it.
    carried: CarriedAnswer | None = None
    # An answer already turned into sentences citing message ids, as planners before
    # ``carried`` sent it: still read for a run in flight across an upgrade.
    proposed: list[DraftSentence] = Field(default_factory=list)
    # The sentences an extract-style attempt chose; the style of the answerer's own call.
    chosen: CarriedChoice | None = None
    answer_style: AnswerStyle = "write"


class RunSnapshot(Contract):
    """The planner's trace and usage so far, kept beside the run so that an ending the
    planner did not write (the deadline watchdog's) still reports what was done."""

    trace: Trace = Field(default_factory=Trace)
    usage: Usage = Field(default_factory=Usage)
    hits: list[Hit] = Field(default_factory=list)
    # When the planner handed the run on to its ending (the answer to the answerer, or its
    # own ending as a draft). Before the deadline, the watchdog waits for that draft
    # (shared.runstore.policy.EVIDENCE_KEEP_SECONDS at most) instead of ending the run.
    handed_off_at: float | None = None


class RunMeta(Contract):
    """What the gateway records when it admits a run: the run's owner (principal and
    the scope it ran in; only they may read it) and the envelope every draft of the run
    must carry."""

    run_id: str
    tenant_id: str
    principal: str
    question: str
    scope_token: str
    created_at: float
    deadline: float
    max_steps: int
    key_id: str = ""
    mailboxes: list[str] = Field(default_factory=list)  # the scope the run was signed for
    cancelled_at: float | None = None  # set by the gateway when the owner cancels the run


class VerificationRequested(Envelope):
    """A run's ending as a stage wrote it. The verifier holds the envelope and question
    against the gateway's :class:`RunMeta`, rebuilds ``hits`` from stored evidence and
    keeps ``reason`` (a stage's words) only as ``RunResult.model_note``."""

    question: str
    ending: Ending
    draft: Draft | None = None
    trace: Trace = Field(default_factory=Trace)
    usage: Usage = Field(default_factory=Usage)
    hits: list[Hit] = Field(default_factory=list)  # ids and order only; content is rebuilt
    reason: str | None = None


class Excerpt(Contract):
    """Text copied from the stored source, never written by a model."""

    text: str
    part: str  # "body" or "attachment:<name>"
    start: int
    end: int
    matched_quote: bool
    # Inside an attachment, the sheet and row, slide, event or page the excerpt is in
    # ("Sheet: Budget 2027, row 4"; pmsearch/shared/attachment_places.py); None elsewhere.
    place: str | None = None


class Citation(Contract):
    message_id: str
    excerpt: Excerpt


class AnswerSentence(Contract):
    text: str
    citations: list[Citation]


class Answer(Contract):
    text: str
    sentences: list[AnswerSentence]
    style: AnswerStyle = Field(
        default="write",
        description='"write": sentences the model wrote; "extract": sentences of the mail, quoted word for word '
        'with who wrote them and when; "write_or_extract": sentences the model wrote, each that its sources '
        "do not bear out replaced by the mail's sentence it was made from.",
    )


class RunResult(Contract):
    run_id: str
    tenant_id: str
    outcome: Outcome
    question: str = ""
    answer: Answer | None = None
    evidence: list[EvidenceSummary] = Field(default_factory=list)
    hits: list[Hit] = Field(default_factory=list)
    trace: Trace = Field(default_factory=Trace)
    usage: Usage = Field(default_factory=Usage)
    reason: ReasonCode | None = None  # set whenever the run is not answered
    # What the planner or answerer (and so perhaps the model, steered by mail) said of the
    # ending: unverified, shown only labelled as the model's, never as the verdict.
    model_note: str | None = Field(default=None, description=UNVERIFIED)
    finished_at: float = 0.0

    @model_validator(mode="before")
    @classmethod
    def _free_text_reason(cls, data: Any) -> Any:
        """A result stored before reasons were codes kept its text as ``reason``: read
        it as the note it always was, so such runs stay readable until they expire."""
        if isinstance(data, dict) and isinstance(data.get("reason"), str) and data["reason"] not in REASONS:
            data = {**data, "reason": None, "model_note": data.get("model_note") or data["reason"][:300]}
        return data


class ProgressEvent(Contract):
    """An entry of a run's progress stream. The gateway relays ``step`` and
    ``evidence`` entries; ``answer`` and ``done`` entries only wake it up: what it sends
    for them is read from the run's stored result, which only the verifier writes."""

    event: Literal["step", "evidence", "answer", "done"]
    payload: dict[str, Any]
