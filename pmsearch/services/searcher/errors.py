"""Errors raised by the searcher service.

    PmError
    └── SearcherError
        ├── ToolError              a tool call refused (InvalidArguments, WidenRefused,
        │                          NotFound, UnknownTool)
        ├── ReembedRefused         an index that cannot be moved to another embedder
        └── IngestError            mail that cannot be imported
            ├── MalformedMessage   not an RFC 822 message (empty, binary, no headers)
            ├── MessageTooLarge    over an ingest limit: size, parse time or memory
            └── UnreadableSource   a path that is not .eml, mbox, Maildir or a folder
"""

from __future__ import annotations

from pmsearch.shared.errors import PmError


class SearcherError(PmError):
    code = "searcher"
    title = "Searcher error"


class ReembedRefused(SearcherError):
    """Nothing to move, or an index in use (`pmsearch reembed`)."""

    status = 409
    code = "reembed_refused"
    title = "Index cannot be re-embedded"


class IngestError(SearcherError):
    status = 422
    code = "ingest"
    title = "Mail could not be imported"


class MalformedMessage(IngestError):
    code = "malformed_message"
    title = "Not an RFC 822 message"


class MessageTooLarge(IngestError):
    status = 413
    code = "message_too_large"
    title = "Message over an ingest limit"


class UnreadableSource(IngestError):
    status = 400
    code = "unreadable_source"
    title = "Mail source cannot be read"


class ToolError(SearcherError):
    """A tool call that was refused or failed; reported for that call only."""

    status = 422
    code = "tool_error"
    title = "Tool call refused"


class InvalidArguments(ToolError):
    code = "invalid_arguments"
    title = "Tool arguments do not match the tool's schema"


class WidenRefused(ToolError):
    """Arguments that name something outside the caller's scope, or a property the
    schema does not know. Recorded as a widen attempt."""

    status = 403
    code = "widen_refused"
    title = "Arguments would widen the scope"


class NotFound(ToolError):
    status = 404
    code = "not_found"
    title = "Not found in scope"


class UnknownTool(ToolError):
    code = "unknown_tool"
    title = "No such tool"
