"""Shared bits of the model-client tests."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from pmsearch.shared.settings import ModelSettings


class Pick(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    limit: int


GOOD = '{"tool": "search", "limit": 3}'
MESSAGES = [{"role": "system", "content": "Plan."}, {"role": "user", "content": "Find the claim."}]


def settings(base_url: str = "http://model.test/v1", **over: Any) -> ModelSettings:
    """Fast, explicit settings (no environment influence on what the tests assert)."""
    values: dict[str, Any] = {
        "model_base_url": base_url,
        "model_api_key": "test-key",
        "agent_model": "test-model",
        "model_output": "json_schema",
        "model_timeout_seconds": 5.0,
        "model_connect_timeout_seconds": 1.0,
        "model_max_tokens": 128,
        "model_retries": 2,
        "model_retry_wait_seconds": 0.01,
        "model_retry_wait_max_seconds": 0.02,
        "breaker_failures": 3,
        "breaker_reset_seconds": 60.0,
    }
    values.update(over)
    return ModelSettings(**values)


def completion(content: str | None = None, tool_args: Any = None, usage: tuple[int, int] = (7, 3)):
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_args is not None:
        message["tool_calls"] = [
            {"id": "c1", "type": "function", "function": {"name": "pick", "arguments": tool_args}}
        ]
    return {
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
    }
