"""The pmsearch command when the gateway is not there, or is not a pmsearch gateway:
one readable line on stderr and a documented exit code, never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import typer

from pmsearch.cli.client import UNREACHABLE, USAGE

COMMANDS = [
    ("search", "invoice"), ("ask", "Who handles the Golf claim?"), ("keys", "list"),
    ("runs", "list"), ("runs", "show", "r1"), ("runs", "show", "r1", "--key", "pk_whatever"),
    ("runs", "cancel", "r1"), ("runs", "cancel", "r1", "--admin"), ("tenants", "set", "acme", "--daily-cap", "5"),
]
IDS = [
    "search", "ask", "keys-list", "runs-list", "runs-show-admin", "runs-show-key", "runs-cancel", "runs-cancel-admin",
    "tenants-set",
]


def pmsearch(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PM_")}
    env.update(PM_API_KEY="pk_whatever", PM_ADMIN_TOKEN="x" * 40)
    return subprocess.run([sys.executable, "-m", "pmsearch.cli.main", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def one_line_error(run: subprocess.CompletedProcess, code: int, *words: str) -> None:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "Traceback" not in run.stderr
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error:"), run.stderr
    assert all(w in lines[0] for w in words), run.stderr
    assert run.returncode == code, run.stderr


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


class _Foreign(BaseHTTPRequestHandler):
    """Another kind of web server: HTML pages, a JSON 404 that is no problem+json, and
    another JSON API's 200."""

    def _answer(self) -> None:
        if self.server.kind == "json200":  # type: ignore[attr-defined]
            status, media_type, body = 200, "application/json", b'{"status": "ok"}'
        elif self.server.kind == "json404":  # type: ignore[attr-defined]
            status, media_type, body = 404, "application/json", b'{"message": "Not Found"}'
        elif self.server.kind == "html404":  # type: ignore[attr-defined]
            status, media_type, body = 404, "text/html", b"<html><body><h1>404</h1></body></html>"
        else:
            status, media_type, body = 200, "text/html", b"<html><body>Welcome to nginx!</body></html>"
        self.send_response(status)
        self.send_header("Content-Type", media_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_DELETE = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(params=["html200", "html404", "json404", "json200"])
def foreign_server(request):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Foreign)
    server.kind = request.param  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_url_where_nothing_listens_is_one_line_and_exit_3(command, closed_port):
    url = f"http://127.0.0.1:{closed_port}"
    one_line_error(pmsearch(*command, "--url", url), UNREACHABLE, "cannot reach the gateway", url)


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_server_that_is_not_pmsearch_is_one_line_and_exit_3(command, foreign_server):
    one_line_error(pmsearch(*command, "--url", foreign_server), UNREACHABLE, "a pmsearch gateway does not send")


def test_a_url_without_a_scheme_is_one_line_and_exit_3():
    one_line_error(pmsearch("search", "invoice", "--url", "localhost:8080"), UNREACHABLE, "localhost:8080")


def test_mode_is_one_of_keyword_semantic_hybrid():
    run = pmsearch("search", "invoice", "--mode", "psychic")
    assert run.returncode == USAGE
    assert "psychic" in run.stderr and "keyword" in run.stderr and "Traceback" not in run.stderr


def commands() -> list[tuple[tuple[str, ...], Any]]:
    """Every group and command of ``pmsearch``: the words that name it, and its Click
    object (Typer's own copy of Click: a group is what has ``commands``)."""
    from pmsearch.cli.main import app

    def walk(command, path: tuple[str, ...]):
        yield path, command
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, (*path, name))

    return list(walk(typer.main.get_command(app), ()))


def test_the_command_walk_reaches_subcommands():
    paths = [path for path, _ in commands()]
    assert ("runs", "cancel") in paths and ("keys", "list") in paths and ("search",) in paths


@pytest.mark.parametrize("path", [path for path, _ in commands()], ids=lambda p: " ".join(p) or "pmsearch")
def test_every_help_documents_the_exit_codes(path):
    run = pmsearch(*path, "--help")
    assert run.returncode == 0, run.stderr
    text = " ".join(run.stdout.split())
    assert "Exit codes: 0 done; 1 " in text and "3 no pmsearch gateway" in text, text


def test_every_option_and_argument_of_every_command_has_help():
    missing = []
    for words, command in commands():
        path = " ".join(("pmsearch", *words))
        if not (command.help or "").strip():
            missing.append(path)
        for param in command.params:
            if not (getattr(param, "help", None) or "").strip() and param.name != "help":
                missing.append(f"{path} {param.name}")
    assert not missing, missing
