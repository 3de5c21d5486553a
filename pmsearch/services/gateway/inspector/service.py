"""What the run inspector page shows of a run: its record, budgets, result and, for each
cited excerpt, the text around it in its source message while the run's evidence is
still kept.

Who may look is decided here too: a key of the run's principal and scope (the rules of
``GET /v1/runs/{id}``, :func:`pmsearch.services.gateway.runs.service.may_read`), or the admin token,
which sees any run. Everything returned is plain text; the page escapes it.
"""

from __future__ import annotations

from pmsearch.services.gateway.auth import Principal
from pmsearch.services.gateway.errors import NotFound
from pmsearch.services.gateway.inspector.schemas import RunView, SourceContext
from pmsearch.services.gateway.runs.service import may_read
from pmsearch.shared.messages import EvidenceMessage, RunMeta, RunResult
from pmsearch.shared.runstore import RunStore

# Characters of the source shown on each side of an excerpt: enough to read it in its
# place without sending a whole long message to the page.
CONTEXT_CHARS = 400


def part_text(message: EvidenceMessage, part: str) -> str | None:
    """The stored text an excerpt's ``part`` names (as the verifier names parts)."""
    if part in ("body", "patch", "quoted"):  # the verifier's patch and quoted parts keep the body's offsets
        return message.body
    if part == "subject":
        return message.subject
    if part.startswith("attachment:"):
        name = part.removeprefix("attachment:")
        return next((a.text for a in message.attachments if a.name == name), None)
    return None


def source_contexts(
    result: RunResult, evidence: dict[str, EvidenceMessage], width: int = CONTEXT_CHARS
) -> list[SourceContext]:
    """Each kept citation's excerpt with up to ``width`` characters of its source on
    either side, taken at the excerpt's stored offsets; an excerpt whose source is gone
    or no longer matches at those offsets is returned alone (``kept=False``)."""
    out: list[SourceContext] = []
    if result.answer is None:
        return out
    for i, sentence in enumerate(result.answer.sentences):
        for j, citation in enumerate(sentence.citations):
            excerpt = citation.excerpt
            ctx = SourceContext(
                sentence=i, citation=j, message_id=citation.message_id, part=excerpt.part, text=excerpt.text
            )
            message = evidence.get(citation.message_id)
            text = part_text(message, excerpt.part) if message else None
            in_place = text is not None and 0 <= excerpt.start <= excerpt.end <= len(text)
            if in_place and text[excerpt.start : excerpt.end] == excerpt.text:
                lo, hi = max(0, excerpt.start - width), min(len(text), excerpt.end + width)
                ctx = ctx.model_copy(update={
                    "before": text[lo : excerpt.start], "after": text[excerpt.end : hi],
                    "clipped_start": lo > 0, "clipped_end": hi < len(text), "kept": True,
                })
            out.append(ctx)
    return out


def cited_ids(result: RunResult | None) -> list[str]:
    if result is None or result.answer is None:
        return []
    return sorted({c.message_id for s in result.answer.sentences for c in s.citations})


class Inspector:
    """Reads what the page shows through the run store; the gateway's Redis user may
    read a run's record, its result and its evidence."""

    def __init__(self, store: RunStore) -> None:
        self.store = store

    async def meta(self, viewer: Principal, run_id: str) -> RunMeta:
        """The run's record for a viewer who may see it; anyone else gets the 404 of a
        run that does not exist."""
        meta = await self.store.meta(run_id)
        if meta is None or not (viewer.admin or may_read(viewer.record, meta)):
            raise NotFound(f"no run {run_id}")
        return meta

    async def view(self, viewer: Principal, run_id: str) -> RunView:
        meta = await self.meta(viewer, run_id)
        result = await self.store.result(run_id)
        # Full bodies stay only minutes after the run (the store's working keys); later
        # the excerpts are shown alone.
        evidence = await self.store.evidence(run_id) if cited_ids(result) else {}
        return RunView(
            run_id=run_id, question=meta.question, tenant_id=meta.tenant_id, principal=meta.principal,
            view="admin" if viewer.admin else "owner", status="finished" if result else "running",
            created_at=meta.created_at, deadline=meta.deadline, max_steps=meta.max_steps,
            max_seconds=round(meta.deadline - meta.created_at, 3), result=result,
            sources=source_contexts(result, evidence) if result else [],
        )
