"""Searcher logic: run one tool call inside a verified scope, or one direct search.

No FastStream here: :class:`ToolRunner` takes typed arguments and returns typed results,
so it is tested directly against a real index. Each tool of the registry
(:data:`pmsearch.shared.tools.TOOLS`) has one handler here, registered under its name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from pmsearch.services.searcher.errors import InvalidArguments, NotFound, ToolError, UnknownTool, WidenRefused
from pmsearch.services.searcher.repository import ScopedMailRepository
from pmsearch.shared.filters import Narrowing
from pmsearch.shared.messages import (
    AttachmentsResult,
    AttachmentView,
    ContactsResult,
    EvidenceMessage,
    Hit,
    HitsResult,
    MessagesResult,
    MessageView,
    ToolCall,
    ToolOutcome,
    ToolOutput,
)
from pmsearch.shared.scope import Scope
from pmsearch.shared.tools import (
    TOOLS,
    ContactsArgs,
    FindRelatedArgs,
    ReadAttachmentTextArgs,
    ReadMessageArgs,
    ReadThreadArgs,
    SearchArgs,
)

log = logging.getLogger("pmsearch.searcher")

# How many of a search's best threads ``thread_latest`` looks into: each adds up to
# five whole messages to what the model reads.
LATEST_THREADS = 3


@dataclass
class ToolRun:
    outcome: ToolOutcome
    evidence: list[EvidenceMessage] = field(default_factory=list)


Handled = tuple[ToolOutput, list[EvidenceMessage]]
Handler = Callable[[ScopedMailRepository, Scope, Any], Handled]
HANDLERS: dict[str, Handler] = {}


def handles(name: str) -> Callable[[Handler], Handler]:
    """Register the handler of the registry's tool ``name`` (a name the registry does
    not know fails at import)."""
    if name not in TOOLS:
        raise KeyError(f"no tool {name!r} in the registry")

    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


def parse_arguments(tool: str, arguments: dict[str, Any]) -> BaseModel:
    """Validate arguments strictly; an unknown property is a widen attempt, other
    mistakes are plain invalid arguments."""
    spec = TOOLS.get(tool)
    if spec is None:
        raise UnknownTool(f"unknown tool {tool!r}; known: {', '.join(TOOLS)}")
    try:
        return spec.args.model_validate(arguments)
    except ValidationError as exc:
        extra = [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == "extra_forbidden"]
        if extra:
            raise WidenRefused(
                f"unknown propert{'y' if len(extra) == 1 else 'ies'} {', '.join(extra)} for {tool}",
                offending=extra,
            ) from None
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"])) or "arguments"
        raise InvalidArguments(f"{tool}: {where}: {first['msg']}") from None


def message_view(m: EvidenceMessage) -> MessageView:
    return MessageView(
        message_id=m.message_id,
        thread_id=m.thread_id,
        mailbox=m.mailbox,
        folder="",
        sender=m.sender,
        recipients=m.recipients,
        date=m.date,
        subject=m.subject,
        attachment_names=[a.name for a in m.attachments],
        body=m.body,
    )


# ------------------------------------------------------------------ handlers


@handles("search")
def _search(repo: ScopedMailRepository, scope: Scope, args: SearchArgs) -> Handled:
    hits = repo.search(scope, args.query, args.mode, args, args.limit)
    evidence = repo.messages(scope, [h.message_id for h in hits])
    latest, around = thread_context(repo, scope, hits, args.thread_latest, args.thread_neighbours)
    result = HitsResult(hits=hits, latest=[message_view(m) for m in latest])
    return result, evidence + latest + around


def thread_latest(repo: ScopedMailRepository, scope: Scope, hits: list[Hit], n: int) -> list[EvidenceMessage]:
    """The newest ``n`` messages of each of the best hits' threads (see :func:`thread_context`)."""
    return thread_context(repo, scope, hits, n, False)[0]


def thread_context(
    repo: ScopedMailRepository, scope: Scope, hits: list[Hit], latest: int, neighbours: bool
) -> tuple[list[EvidenceMessage], list[EvidenceMessage]]:
    """For each of the best hits' threads, read once: its newest ``latest`` messages and,
    with ``neighbours``, the messages on either side of each hit in it by date (a
    question often names the request while the answer is in the reply, or the other way
    round). Those that are hits already are left out (the model has them). Read through
    the scoped thread read, so they are scoped like the hits themselves. A message whose
    sender failed authentication is never added: a forged reply would speak last."""
    seen = {h.message_id for h in hits}
    threads = list(dict.fromkeys(h.thread_id for h in hits))[:LATEST_THREADS]
    newest: list[EvidenceMessage] = []
    around: list[EvidenceMessage] = []
    for thread_id in threads if latest or neighbours else ():
        try:
            if neighbours:
                thread = repo.thread(scope, thread_id, NEIGHBOUR_READ, latest=True)
            else:
                thread = repo.thread(scope, thread_id, latest + LATEST_SKIPPED, latest=True)
        except NotFound:  # gone since the search: nothing to add
            continue
        trusted = [m for m in thread if m.sender_auth != "fail"]
        for m in trusted[-latest:] if latest else ():
            if m.message_id not in seen:
                seen.add(m.message_id)
                newest.append(m)
        if not neighbours:
            continue
        ids = [m.message_id for m in thread]
        for hit in (h for h in hits if h.thread_id == thread_id and h.message_id in ids):
            at = ids.index(hit.message_id)
            for m in (thread[at - 1] if at else None, thread[at + 1] if at + 1 < len(thread) else None):
                if m is not None and m.sender_auth != "fail" and m.message_id not in seen and len(around) < MOST_NEIGHBOURS:
                    seen.add(m.message_id)
                    around.append(m)
    return newest, around


# A thread read for its hits' neighbours: its newest messages, as many as this.
NEIGHBOUR_READ = 200
# Neighbours a search adds at most: each is a whole message in the run's evidence.
MOST_NEIGHBOURS = 6
# Messages of a thread read past the newest ``n``, so that those failing authentication
# can be passed over.
LATEST_SKIPPED = 3


@handles("read_thread")
def _read_thread(repo: ScopedMailRepository, scope: Scope, args: ReadThreadArgs) -> Handled:
    msgs = repo.thread(scope, args.thread_id, args.limit)
    return MessagesResult(messages=[message_view(m) for m in msgs]), msgs


@handles("read_message")
def _read_message(repo: ScopedMailRepository, scope: Scope, args: ReadMessageArgs) -> Handled:
    msg = repo.message(scope, args.message_id)
    return MessagesResult(messages=[message_view(msg)]), [msg]


@handles("read_attachment_text")
def _read_attachment_text(repo: ScopedMailRepository, scope: Scope, args: ReadAttachmentTextArgs) -> Handled:
    msg = repo.message(scope, args.message_id)
    parts = [a for a in msg.attachments if args.attachment_name in (None, a.name)]
    views = [AttachmentView(message_id=msg.message_id, name=a.name, text=a.text) for a in parts]
    return AttachmentsResult(attachments=views), [msg]


@handles("find_related")
def _find_related(repo: ScopedMailRepository, scope: Scope, args: FindRelatedArgs) -> Handled:
    hits = repo.related(scope, args.message_id, args, args.limit)
    return HitsResult(hits=hits), repo.messages(scope, [h.message_id for h in hits])


@handles("contacts")
def _contacts(repo: ScopedMailRepository, scope: Scope, args: ContactsArgs) -> Handled:
    return ContactsResult(contacts=repo.contacts(scope, args, args.query, args.limit)), []


# ------------------------------------------------------------------ runner


def _failed(call: ToolCall, started: float, error: str, code: str, *, widen: bool = False) -> ToolRun:
    return ToolRun(
        ToolOutcome(
            call_id=call.call_id,
            tool=call.tool,
            arguments=call.arguments,
            ok=False,
            error=error,
            error_code=code,
            widen_attempt=widen,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
    )


class ToolRunner:
    """Runs the read-only tools for one scope at a time."""

    def __init__(self, repository: ScopedMailRepository) -> None:
        self._repo = repository

    def run(self, scope: Scope, call: ToolCall) -> ToolRun:
        """Run one call; whatever it raises fails that call only, never its batch."""
        started = time.perf_counter()
        try:
            args = parse_arguments(call.tool, call.arguments)
            output, evidence = HANDLERS[call.tool](self._repo, scope, args)
        except ToolError as exc:
            return _failed(call, started, exc.detail, exc.code, widen=isinstance(exc, WidenRefused))
        except Exception:
            # A bug or an index fault in one tool: the batch's other calls still count,
            # and the model is told only that this call failed (no internals).
            log.exception("tool %s failed (call %s)", call.tool, call.call_id)
            return _failed(call, started, "the tool failed; try another search", "internal")
        return ToolRun(
            ToolOutcome(
                call_id=call.call_id,
                tool=call.tool,
                arguments=call.arguments,
                ok=True,
                duration_ms=(time.perf_counter() - started) * 1000,
                message_ids=[m.message_id for m in evidence],
                output=output,
            ),
            evidence,
        )

    def direct_search(
        self, scope: Scope, query: str, mode: str, filters: dict[str, Any], limit: int
    ) -> list[Hit]:
        """Keyword / semantic / hybrid search for the HTTP API."""
        try:
            narrowing = Narrowing.model_validate(filters)
        except ValidationError as exc:
            extra = [".".join(map(str, e["loc"])) for e in exc.errors() if e["type"] == "extra_forbidden"]
            if extra:
                raise WidenRefused(f"unknown filter {', '.join(extra)}", offending=extra) from None
            first = exc.errors()[0]
            raise InvalidArguments(f"filters.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        return self._repo.search(scope, query, mode, narrowing, limit)  # type: ignore[arg-type]
