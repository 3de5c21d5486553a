"""pmsearch's MCP server: the gateway's search, agentic runs and message reads as MCP
tools, over streamable HTTP on the gateway (:func:`mount`) and over stdio through
``pmsearch mcp`` (:mod:`pmsearch.cli.mcp`)."""

from pmsearch.services.gateway.mcp.endpoints import mount

__all__ = ["mount"]
