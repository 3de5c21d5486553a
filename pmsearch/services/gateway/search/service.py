"""Direct searches and reads: the searcher answers them inside the key's signed scope,
outside any run (nothing is stored as evidence)."""

from __future__ import annotations

import time
import uuid

from pmsearch.services.gateway.errors import Forbidden
from pmsearch.services.gateway.schemas import ApiKeyRecord
from pmsearch.services.gateway.search.schemas import SearchRequest, SearchResponse
from pmsearch.services.gateway.searcher import Searcher
from pmsearch.shared import streams
from pmsearch.shared.errors import PmError
from pmsearch.shared.messages import LookupReplied, LookupRequested, SearchReplied, SearchRequested


class _Problem(PmError):
    """A searcher-side error relayed with the searcher's own status and code."""

    def __init__(self, detail: str, status: int, code: str) -> None:
        super().__init__(detail)
        self.status = status  # type: ignore[misc]
        self.code = code  # type: ignore[misc]
        self.title = code.replace("_", " ").capitalize()  # type: ignore[misc]


class SearchService:
    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher
        self.settings = searcher.settings

    async def search(self, record: ApiKeyRecord, req: SearchRequest) -> SearchResponse:
        if req.filters.mailboxes:
            outside = sorted(set(req.filters.mailboxes) - set(record.mailboxes))
            if outside:
                raise Forbidden(f"mailbox {', '.join(outside)} is outside this key's scope")
        started = time.perf_counter()
        request_id = uuid.uuid4().hex
        timeout = self.settings.search_timeout_seconds
        message = SearchRequested(
            request_id=request_id,
            tenant_id=record.tenant_id,
            scope_token=self.searcher.sign(record),
            deadline=time.time() + timeout,
            query=req.query,
            mode=req.mode,  # type: ignore[arg-type]
            filters=req.filters.model_dump(mode="json", exclude_none=True),
            limit=req.limit,
        )
        raw = await self.searcher.call(streams.QUERIES, request_id, message, timeout)
        reply = SearchReplied.model_validate_json(raw)
        if not reply.ok:
            raise _Problem(reply.error or "search failed", reply.status, reply.error_code or "search_failed")
        return SearchResponse(
            query=req.query, mode=req.mode, hits=reply.hits, took_ms=(time.perf_counter() - started) * 1000
        )

    async def lookup(self, record: ApiKeyRecord, tool: str, arguments: dict) -> LookupReplied:
        """One read-only tool run by the searcher inside the key's signed scope (``pm:lookups``)."""
        request_id = uuid.uuid4().hex
        timeout = self.settings.search_timeout_seconds
        message = LookupRequested(
            request_id=request_id, tenant_id=record.tenant_id, scope_token=self.searcher.sign(record),
            deadline=time.time() + timeout, tool=tool, arguments=arguments,
        )
        return LookupReplied.model_validate_json(await self.searcher.call(streams.LOOKUPS, request_id, message, timeout))
