"""MCP sessions through the official client, over either transport: streamable HTTP
on the gateway, or stdio through ``pmsearch mcp`` as a subprocess."""

from __future__ import annotations

import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[4]


@asynccontextmanager
async def mcp_session(stack, transport: str, key: str) -> AsyncIterator[ClientSession]:
    if transport == "http":
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx.Timeout(30, read=120))
        async with http, streamable_http_client(f"{stack.gateway_url}/mcp", http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session
    else:
        env = {**os.environ, "PM_API_KEY": key, "PM_GATEWAY_URL": stack.gateway_url}
        params = StdioServerParameters(command=sys.executable, args=["-m", "pmsearch.cli.main", "mcp"], env=env, cwd=str(ROOT))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@pytest.fixture(params=["http", "stdio"])
def transport(request) -> str:
    return request.param


@pytest.fixture
def connect(demo_stack, transport):
    """``connect(key)``: an initialised MCP session over this test's transport."""
    return lambda key: mcp_session(demo_stack, transport, key)
