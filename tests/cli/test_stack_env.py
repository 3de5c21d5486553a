"""What `pmsearch up` hands each process from the operator's environment (cli/stack.py)."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

from cli.stack import Stack
from shared.bus import SOCKET_MARGIN_SECONDS, connect
from shared.settings import ServiceSettings


def test_log_settings_are_passed_on_and_no_other_pm_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("PM_LOG_FORMAT", "text")
    monkeypatch.setenv("PM_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("PM_MODEL_API_KEY", "a-key-meant-for-the-model-stages-only")
    env = Stack(tmp_path, services=()).env_for("verifier")
    assert (env["PM_LOG_FORMAT"], env["PM_LOG_LEVEL"]) == ("text", "DEBUG")
    assert "PM_MODEL_API_KEY" not in env


def test_stages_are_given_redis_unix_socket(tmp_path):
    stack = Stack(tmp_path, services=())
    url = stack.env_for("planner")["PM_REDIS_URL"]
    assert url == f"unix://{tmp_path.resolve() / 'redis' / 'redis.sock'}?db=0"


def test_a_var_dir_too_deep_for_a_socket_path_gives_the_stages_tcp(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    stack = Stack(deep, services=())
    assert stack.redis_socket is None
    assert stack.env_for("planner")["PM_REDIS_URL"] == stack.redis_url


async def test_a_stage_user_talks_to_the_stacks_redis_through_its_socket_without_keepalive():
    with tempfile.TemporaryDirectory() as short:  # a pytest tmp_path can be near the socket path limit
        stack = Stack(Path(short), services=())
        stack.start_redis()
        try:
            settings = ServiceSettings(
                redis_url=stack.stage_redis_url, redis_username="planner", redis_password=stack.secrets.passwords["planner"]
            )
            client = connect(settings, longest_block_seconds=5)
            try:
                assert await client.ping()
                conn = await client.connection_pool.get_connection()
                try:
                    sock = conn._writer.transport.get_extra_info("socket")
                    assert sock.family == socket.AF_UNIX
                    assert conn.socket_timeout == 5 + SOCKET_MARGIN_SECONDS
                finally:
                    await client.connection_pool.release(conn)
            finally:
                await client.aclose()
        finally:
            stack.stop()
