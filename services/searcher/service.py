"""Searcher logic: run one tool call inside a verified scope, or one direct search.

No FastStream here: :class:`ToolRunner` takes typed arguments and returns typed results,
so it is tested directly against a real index.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from services.searcher.errors import InvalidArguments, ToolError, UnknownTool, WidenRefused
from services.searcher.repository import ScopedMailRepository
from services.searcher.schemas import (
    TOOLS,
    AttachmentView,
    ContactsArgs,
    FindRelatedArgs,
    MessageView,
    Narrowing,
    ReadAttachmentTextArgs,
    ReadMessageArgs,
    ReadThreadArgs,
    SearchArgs,
)
from shared.messages import EvidenceMessage, Hit, ToolCall, ToolOutcome
from shared.scope import Scope


@dataclass
class ToolRun:
    outcome: ToolOutcome
    evidence: list[EvidenceMessage] = field(default_factory=list)


def parse_arguments(tool: str, arguments: dict[str, Any]) -> Any:
    """Validate arguments strictly; an unknown property is a widen attempt, other
    mistakes are plain invalid arguments."""
    model = TOOLS.get(tool)
    if model is None:
        raise UnknownTool(f"unknown tool {tool!r}; known: {', '.join(TOOLS)}")
    try:
        return model.model_validate(arguments)
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


def _hit_view(h: Hit) -> dict[str, Any]:
    return {
        "message_id": h.message_id,
        "thread_id": h.thread_id,
        "mailbox": h.mailbox,
        "score": round(h.score, 4),
        "from": h.sender,
        "date": h.date.isoformat() if h.date else None,
        "subject": h.subject,
        "snippet": h.snippet,
    }


def _message_view(m: EvidenceMessage) -> dict[str, Any]:
    return MessageView(
        message_id=m.message_id,
        thread_id=m.thread_id,
        mailbox=m.mailbox,
        folder="",
        sender=m.sender,
        recipients=m.recipients,
        date=m.date.isoformat() if m.date else None,
        subject=m.subject,
        attachment_names=[a.name for a in m.attachments],
        body=m.body,
    ).model_dump()


class ToolRunner:
    """Runs the read-only tools for one scope at a time."""

    def __init__(self, repository: ScopedMailRepository) -> None:
        self._repo = repository

    def run(self, scope: Scope, call: ToolCall) -> ToolRun:
        started = time.perf_counter()
        try:
            args = parse_arguments(call.tool, call.arguments)
            output, evidence = self._dispatch(scope, args)
        except ToolError as exc:
            return ToolRun(
                ToolOutcome(
                    call_id=call.call_id,
                    tool=call.tool,
                    arguments=call.arguments,
                    ok=False,
                    error=exc.detail,
                    error_code=exc.code,
                    widen_attempt=isinstance(exc, WidenRefused),
                    duration_ms=(time.perf_counter() - started) * 1000,
                )
            )
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

    def _dispatch(self, scope: Scope, args: Any) -> tuple[Any, list[EvidenceMessage]]:
        repo = self._repo
        if isinstance(args, SearchArgs):
            hits = repo.search(scope, args.query, args.mode, args, args.limit)
            return [_hit_view(h) for h in hits], repo.messages(scope, [h.message_id for h in hits])
        if isinstance(args, ReadThreadArgs):
            msgs = repo.thread(scope, args.thread_id, args.limit)
            return [_message_view(m) for m in msgs], msgs
        if isinstance(args, ReadMessageArgs):
            msg = repo.message(scope, args.message_id)
            return _message_view(msg), [msg]
        if isinstance(args, ReadAttachmentTextArgs):
            msg = repo.message(scope, args.message_id)
            parts = [a for a in msg.attachments if args.attachment_name in (None, a.name)]
            views = [AttachmentView(message_id=msg.message_id, name=a.name, text=a.text).model_dump() for a in parts]
            return views, [msg]
        if isinstance(args, FindRelatedArgs):
            hits = repo.related(scope, args.message_id, args, args.limit)
            return [_hit_view(h) for h in hits], repo.messages(scope, [h.message_id for h in hits])
        if isinstance(args, ContactsArgs):
            people = repo.contacts(scope, args, args.query, args.limit)
            return [c.model_dump() for c in people], []
        raise UnknownTool(f"no handler for {type(args).__name__}")  # pragma: no cover

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
