"""A scripted OpenAI-compatible model server, for tests that need a model to misbehave
on purpose (invented IDs, forged quotes, injected orders, errors, hanging).

It is a real HTTP server on a loopback port (stdlib, one thread per request), serving
``GET /v1/models`` and ``POST /v1/chat/completions``, so the code under test talks to it
exactly as to a provider. It records every request it gets (to assert fences and
prompts) and can run in-process or as its own process::

    python -m pmsearch.testing.scripted_model --port 0 --script script.json

A script is a list of rules, tried in order; the first one that matches the request and
has uses left answers it. A script file is either a bare list of replies (each used
once, in order: a queue) or::

    {"rules": [{"match": {"schema_name": "plan", "last_user": "(?P<id><[^>]+>)"},
                "reply": {"content": "{\"cite\": \"{{id}}\"}"}, "times": null}],
     "default": {"status": 500, "error": "no rule matched"}}

``schema_name`` matches the json_schema name, the forced tool's name, or the schema's
``title`` (pydantic's class name, the only name a json_object request carries).
Named regex groups fill ``{{name}}`` placeholders in the reply content. In-process,
the script may also be a callable ``(request_body) -> Reply``.

Control endpoints for tests in other processes: ``GET /_scripted/requests`` (the
recorded requests), ``POST /_scripted/script`` (replace the script),
``POST /_scripted/reset`` (forget the requests).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Match(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_name: str | None = None
    last_user: str | None = None  # regex searched in the last user message
    any_message: str | None = None  # regex searched in all messages, joined


class Reply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str | None = None  # the assistant text (or tool-call arguments)
    object: Any = None  # shorthand: JSON-encoded into content
    status: int = 200  # non-200 answers {"error": {...}} with this status
    error: str = "scripted error"
    delay: float = 0.0  # seconds of latency before answering normally
    hang: float = 0.0  # seconds to hold the request, then drop it unanswered
    drop: bool = False  # close the connection without any response
    tool_call: bool | None = None  # None: a tool call exactly when the request has tools
    prompt_tokens: int = 10
    completion_tokens: int = 5
    finish_reason: str = "stop"


class Rule(BaseModel):
    model_config = ConfigDict(extra="forbid")

    match: Match = Field(default_factory=Match)
    reply: Reply
    times: int | None = None  # None: unlimited


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rules: list[Rule] = Field(default_factory=list)
    default: Reply | None = None


ScriptLike = (
    Script | list[Reply] | list[dict[str, Any]] | dict[str, Any] | Callable[[dict[str, Any]], Reply]
)


def queue(*replies: Reply | dict[str, Any]) -> Script:
    """Replies used once each, in order."""
    return Script(rules=[Rule(reply=Reply.model_validate(r), times=1) for r in replies])


def to_script(script: ScriptLike | None) -> Script | Callable[[dict[str, Any]], Reply]:
    if script is None:
        return Script()
    if callable(script) and not isinstance(script, BaseModel):
        return script
    if isinstance(script, Script):
        return script
    if isinstance(script, list):
        return queue(*script)
    return Script.model_validate(script)


def _schema_names(body: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    fmt = body.get("response_format") or {}
    if isinstance(fmt.get("json_schema"), dict):
        names.add(str(fmt["json_schema"].get("name", "")))
        names.add(str((fmt["json_schema"].get("schema") or {}).get("title", "")))
    if isinstance(fmt.get("schema"), dict):
        names.add(str(fmt["schema"].get("title", "")))
    for tool in body.get("tools") or []:
        fn = tool.get("function") or {}
        names.add(str(fn.get("name", "")))
        names.add(str((fn.get("parameters") or {}).get("title", "")))
    return names - {""}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def match_groups(match: Match, body: dict[str, Any]) -> dict[str, str] | None:
    """The named groups captured if ``match`` fits the request, else None."""
    messages = body.get("messages") or []
    groups: dict[str, str] = {}
    if match.schema_name is not None and match.schema_name not in _schema_names(body):
        return None
    if match.last_user is not None:
        users = [_text(m) for m in messages if m.get("role") == "user"]
        found = re.search(match.last_user, users[-1] if users else "", re.DOTALL)
        if not found:
            return None
        groups.update({k: v for k, v in found.groupdict().items() if v is not None})
    if match.any_message is not None:
        found = re.search(match.any_message, "\n".join(_text(m) for m in messages), re.DOTALL)
        if not found:
            return None
        groups.update({k: v for k, v in found.groupdict().items() if v is not None})
    return groups


def completion(reply: Reply, body: dict[str, Any], groups: dict[str, str]) -> dict[str, Any]:
    """The chat.completion body for a 200 reply."""
    text = reply.content if reply.content is not None else json.dumps(reply.object)
    for name, value in groups.items():
        text = text.replace("{{" + name + "}}", value)
    as_tool = reply.tool_call if reply.tool_call is not None else bool(body.get("tools"))
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if as_tool:
        fn = ((body.get("tools") or [{}])[0].get("function") or {}).get("name", "tool")
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": fn, "arguments": text}}
            ],
        }
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }


class ScriptedModel:
    """The server. ``with ScriptedModel(script) as model: model.base_url ...``"""

    def __init__(
        self,
        script: ScriptLike | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        record_path: Path | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._script = to_script(script)
        self._uses: dict[int, int] = {}
        self._stopping = threading.Event()
        self.requests: list[dict[str, Any]] = []
        self.record_path = record_path
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True  # a hanging request never blocks shutdown
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedModel:
        # A short poll interval keeps stop() (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def serve_until_signalled(self, ready: Callable[[], None] = lambda: None) -> None:
        """Serve as a process's main loop; call ``ready`` once serving, stop on SIGTERM/SIGINT."""
        # The main thread waits in sigwait: a signal handler that raised inside
        # serve_forever could land in a lock the server holds and leave it running.
        stop_signals = {signal.SIGTERM, signal.SIGINT}
        signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
        self.start()
        ready()
        signal.sigwait(stop_signals)
        self.stop()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_script(self, script: ScriptLike | None) -> None:
        with self._lock:
            self._script = to_script(script)
            self._uses = {}

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)
        if self.record_path is not None:
            with self._lock, self.record_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry) + "\n")

    def choose(self, body: dict[str, Any]) -> tuple[Reply, dict[str, str]]:
        """The reply for a request, consuming one use of the rule that gave it."""
        with self._lock:
            script = self._script
            if not isinstance(script, Script):
                return script(body), {}
            for index, rule in enumerate(script.rules):
                if rule.times is not None and self._uses.get(index, 0) >= rule.times:
                    continue
                groups = match_groups(rule.match, body)
                if groups is None:
                    continue
                self._uses[index] = self._uses.get(index, 0) + 1
                return rule.reply, groups
            if script.default is not None:
                return script.default, {}
        return Reply(status=500, error="scripted model: no rule matched this request"), {}

    def wait(self, seconds: float) -> None:
        """Sleep, but wake at once when the server stops."""
        self._stopping.wait(seconds)


def _handler_for(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The response goes out as two writes (headers, then body). With Nagle's algorithm
        # on, the body waits for the client's delayed ACK of the headers: about 40 ms a
        # call on Linux, which the benchmarks would count as the service's overhead.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # keep test output clean

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return json.loads(raw or b"null")
            except ValueError:
                return None

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
            elif self.path == "/_scripted/requests":
                with model._lock:
                    self._send(200, list(model.requests))
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:  # noqa: N802
            body = self._body()
            if self.path == "/_scripted/script":
                model.set_script(body)
                return self._send(200, {"ok": True})
            if self.path == "/_scripted/reset":
                model.reset()
                return self._send(200, {"ok": True})
            if not self.path.rstrip("/").endswith("/chat/completions"):
                return self._send(404, {"error": {"message": "not found"}})
            if not isinstance(body, dict):
                return self._send(400, {"error": {"message": "body is not a JSON object"}})
            model.record(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "body": body,
                    "at": time.time(),
                }
            )
            try:
                reply, groups = model.choose(body)
            except Exception as exc:  # noqa: BLE001 - a broken script must surface as a reply
                reply, groups = Reply(status=500, error=f"script failed: {exc!r}"), {}
            self._answer(reply, body, groups)

        def _answer(self, reply: Reply, body: dict[str, Any], groups: dict[str, str]) -> None:
            if reply.delay:
                model.wait(reply.delay)
            if reply.hang:
                model.wait(reply.hang)
            if reply.hang or reply.drop:
                self.close_connection = True
                return
            try:
                if reply.status != 200:
                    error = {"message": reply.error, "code": reply.status}
                    self._send(reply.status, {"error": error})
                else:
                    self._send(200, completion(reply, body, groups))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up first (its timeout): nothing to do

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Scripted OpenAI-compatible model server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="JSON script (see the module docstring)")
    parser.add_argument("--record", type=Path, help="append each request as a JSON line")
    parser.add_argument("--port-file", type=Path, help="write the bound port here")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text()) if args.script else None
    model = ScriptedModel(script, host=args.host, port=args.port, record_path=args.record)
    if args.port_file:
        args.port_file.write_text(str(model.port))
    model.serve_until_signalled(
        lambda: print(f"scripted model listening on {model.base_url}", flush=True)
    )

if __name__ == "__main__":
    main()
