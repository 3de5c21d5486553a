"""``pmsearch mcp`` as an MCP client starts it: its failures are one line or a JSON-RPC
error, never a traceback or stray text on stdout. Its tools over a running stack are
tested in tests/services/gateway/mcp/ (both transports)."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import McpError

from pmsearch.cli.stack import free_port


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    return {**env, **extra}


def test_mcp_without_a_key_exits_with_one_readable_line():
    run = subprocess.run([sys.executable, "-m", "pmsearch.cli.main", "mcp"], env=_env(), capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=60)
    assert run.returncode == 1
    assert run.stdout == ""  # stdout is the MCP channel: nothing else may be written there
    assert run.stderr.strip().splitlines() == ["error: no API key: pass --key or set PM_API_KEY"]


async def test_an_unreachable_gateway_is_a_jsonrpc_error_not_a_traceback(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    params = StdioServerParameters(command=sys.executable, args=["-m", "pmsearch.cli.main", "mcp", "--url", url],
                                   env=_env(PM_API_KEY="pk_whatever"))
    errlog = (tmp_path / "stderr.txt").open("w")
    with pytest.raises(Exception) as caught:
        with anyio.fail_after(60):
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
    errlog.close()
    (error,) = [e for e in _leaves(caught.value) if isinstance(e, McpError)]
    assert f"cannot reach the gateway at {url}/mcp" in str(error)
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside task groups' exception groups."""
    inner = getattr(exc, "exceptions", None)
    return [leaf for e in inner for leaf in _leaves(e)] if inner else [exc]
