"""The streams as an AsyncAPI 3.0 document: which message each stream carries, who
sends it and which consumer group receives it.

:data:`CHANNELS` is the one map from stream to message model; the stages subscribe with
the same models (a test holds them to it), and :func:`document` renders it with the
models' own JSON schemas, so the document cannot describe a message the code does not
parse. One channel per stream, one message per channel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field
from pydantic.json_schema import models_json_schema

from pmsearch.shared import messages as m
from pmsearch.shared import streams
from pmsearch.shared.bus import DATA_FIELD

ASYNCAPI_VERSION = "3.0.0"
_REF = "#/components/schemas/{model}"


class DeadLetter(BaseModel):
    """An entry parked in ``<stream>:dead``: plain stream fields, not an envelope."""

    payload: str = Field(description="The entry's original envelope (or a note when it held raw mail).")
    error: str = Field(description="`<code>: <detail>`, why it could not be handled.")
    deliveries: str = Field(description="How often Redis had delivered it (a decimal string).")


@dataclass(frozen=True)
class Channel:
    """One stream: its channel id, address (``{run_id}`` is a parameter) and message."""

    id: str
    address: str
    model: type[BaseModel]
    senders: tuple[str, ...]
    receiver: str | None  # the consumer group; None for a stream read by XREAD or by nobody
    description: str
    parameters: tuple[str, ...] = ()


CHANNELS: tuple[Channel, ...] = (
    Channel("runs", streams.RUNS, m.RunRequested, ("gateway",), streams.GROUP[streams.RUNS],
            "An admitted agentic run, with its signed scope, budgets and deadline."),
    Channel("tools", streams.TOOLS, m.ToolBatchRequested, ("planner",), streams.GROUP[streams.TOOLS],
            "A step's tool calls, run by the searcher inside the signed scope."),
    Channel("observations", streams.OBSERVATIONS, m.ToolBatchCompleted, ("searcher",),
            streams.GROUP[streams.OBSERVATIONS], "What a step's tool calls found."),
    Channel("answers", streams.ANSWERS, m.AnswerRequested, ("planner",), streams.GROUP[streams.ANSWERS],
            "The evidence is in: write (or cite) the answer."),
    Channel("draftsFromPlanner", streams.DRAFTS_FROM_PLANNER, m.VerificationRequested, ("planner",),
            streams.GROUP[streams.DRAFTS_FROM_PLANNER],
            "A run's ending as the planner wrote it (it gave up, or the budget ran out); the verifier checks it."),
    Channel("draftsFromAnswerer", streams.DRAFTS_FROM_ANSWERER, m.VerificationRequested, ("answerer",),
            streams.GROUP[streams.DRAFTS_FROM_ANSWERER],
            "A run's answer as the answerer wrote it; the verifier checks it."),
    Channel("draftsFromWatchdog", streams.DRAFTS_FROM_WATCHDOG, m.VerificationRequested, ("gateway",),
            streams.GROUP[streams.DRAFTS_FROM_WATCHDOG],
            "The ending of a run past its deadline, from the gateway's watchdog; the verifier checks it."),
    Channel("draftsLegacy", streams.LEGACY_DRAFTS, m.VerificationRequested, (),
            streams.GROUP[streams.LEGACY_DRAFTS],
            "The one drafts stream of earlier releases: nothing writes to it now; the verifier drains what is left."),
    Channel("queries", streams.QUERIES, m.SearchRequested, ("gateway",), streams.GROUP[streams.QUERIES],
            "A direct keyword, semantic or hybrid search; the reply goes to `pm:reply:{request_id}`."),
    Channel("lookups", streams.LOOKUPS, m.LookupRequested, ("gateway",), streams.GROUP[streams.LOOKUPS],
            "A read-only tool call outside any run (MCP `read_message`); the reply goes to `pm:reply:{request_id}`."),
    Channel("ingest", streams.INGEST, m.IngestRequested, ("gateway", "sync"), streams.GROUP[streams.INGEST],
            "Raw RFC 822 mail to import; each entry is deleted once handled."),
    Channel("withdrawn", streams.WITHDRAWN, m.DeliveryWithdrawn, ("sync",), streams.GROUP[streams.WITHDRAWN],
            "Deliveries that ended on a mail server (expunged or moved away): removed from the index."),
    # The key's braces are a Redis Cluster hash tag: the address `pm:run:{abc}:progress`
    # is the parameter run_id=abc.
    Channel("runProgress", streams.progress_key("run_id"), m.ProgressEvent, ("planner", "searcher", "verifier"),
            None, "A run's progress, read by the gateway with XREAD and relayed as server-sent events.",
            parameters=("run_id",)),
)

CONSUMED = tuple(c for c in CHANNELS if c.receiver is not None)
DEAD_LETTERS: tuple[Channel, ...] = tuple(
    Channel(f"{c.id}Dead", streams.dead_letter(c.address), DeadLetter, (c.receiver or "",), None,
            f"Entries of `{c.address}` that could not be handled: broke their contract, or were delivered too often.")
    for c in CONSUMED
)


def _asyncapi_schema(node: Any) -> Any:
    """Pydantic's JSON schema in AsyncAPI Schema's dialect: there ``discriminator`` is
    the property's name, not OpenAPI's ``{propertyName, mapping}`` object."""
    if isinstance(node, dict):
        out = {k: _asyncapi_schema(v) for k, v in node.items()}
        if isinstance(out.get("discriminator"), dict):
            out["discriminator"] = out["discriminator"]["propertyName"]
        return out
    if isinstance(node, list):
        return [_asyncapi_schema(v) for v in node]
    return node


def _message_name(channel: Channel) -> str:
    return channel.model.__name__


def document(version: str = "0.1.0") -> dict[str, Any]:
    """The AsyncAPI 3.0 document of every stream and dead-letter stream."""
    channels = CHANNELS + DEAD_LETTERS
    models = {c.model for c in channels}
    _, defs = models_json_schema(
        [(model, "serialization") for model in sorted(models, key=lambda mo: mo.__name__)], ref_template=_REF
    )
    schemas = _asyncapi_schema(defs.get("$defs", {}))
    messages: dict[str, Any] = {}
    doc_channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    for c in channels:
        name = _message_name(c)
        enveloped = c.model is not DeadLetter
        message = {
            "name": name,
            "title": name,
            "summary": (c.model.__doc__ or name).strip().splitlines()[0],
            "contentType": "application/json",
            "payload": {"$ref": _REF.format(model=name)},
        }
        if enveloped:
            message["headers"] = {
                "type": "object",
                "properties": {
                    "content-type": {"type": "string", "const": "application/json"},
                    "message_type": {"type": "string", "const": name},
                },
            }
        messages[name] = message
        doc_channels[c.id] = {
            "address": c.address,
            "description": c.description,
            "messages": {name: {"$ref": f"#/components/messages/{name}"}},
            **({"parameters": {p: {"description": f"The {p.replace('_', ' ')} (its braces are part of the key)."}
                              for p in c.parameters}}
               if c.parameters else {}),
        }
        for sender in c.senders:
            operations[f"{sender}Sends{c.id[0].upper()}{c.id[1:]}"] = {
                "action": "send",
                "channel": {"$ref": f"#/channels/{c.id}"},
                "messages": [{"$ref": f"#/channels/{c.id}/messages/{name}"}],
            }
        if c.receiver:
            operations[f"{c.receiver}Receives{c.id[0].upper()}{c.id[1:]}"] = {
                "action": "receive",
                "channel": {"$ref": f"#/channels/{c.id}"},
                "messages": [{"$ref": f"#/channels/{c.id}/messages/{name}"}],
                "description": f"Consumer group `{c.receiver}` (XREADGROUP); acknowledged after the handler returns.",
            }
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": {
            "title": "pmsearch streams",
            "version": version,
            "description": (
                "Redis streams between pmsearch's stages. Each entry of a stream below (not of a "
                f"dead-letter stream) has one field, `{DATA_FIELD}`, holding the JSON envelope "
                '`{"data": "<the message as JSON text>", "headers": {...}}`; the message schema '
                "describes `data`, the headers schema `headers`. Messages forbid unknown fields."
            ),
        },
        "defaultContentType": "application/json",
        "servers": {
            "redis": {
                "host": "localhost:6379", "protocol": "redis", "description": "Each stage connects as its own ACL user."
            }
        },
        "channels": doc_channels,
        "operations": operations,
        "components": {"messages": messages, "schemas": schemas},
    }
