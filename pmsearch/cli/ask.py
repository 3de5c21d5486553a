"""``pmsearch ask``: one agentic run, streamed live to the terminal."""

from __future__ import annotations

import json
import time
import uuid

import httpx
from httpx_sse import SSEError, connect_sse
from rich.console import Console

from pmsearch.cli.client import fail, not_pmsearch, refused, unreachable
from pmsearch.cli.untrusted import line
from pmsearch.shared.messages import REASONS


def render_event(console: Console, event: str, data: dict) -> None:
    if event == "step":
        calls = data.get("calls") or []
        what = ", ".join(f"{c['tool']}({json.dumps(c['arguments'], ensure_ascii=False)[:80]})" for c in calls)
        action = data.get("action")
        text = f"step {data.get('step')} {data.get('kind', '')}"
        if what:
            text += f": {what}"
        elif action:
            text += f": {action}" + (f" ({data['reason']})" if data.get("reason") else "")
        console.print(line((text, "cyan")), highlight=False)
    elif event == "evidence":
        m = data.get("message", {})
        console.print(
            line("  ", ("evidence", "dim"), f" {str(m.get('date') or '')[:10]} {m.get('sender', '')}: {m.get('subject', '')} ",
                 (str(m.get("message_id")), "dim")),
            highlight=False,
        )
    elif event == "done":
        render_result(console, data)


def render_result(console: Console, result: dict) -> None:
    # Every string here may come from mail or a model: printed as Text, never as markup.
    outcome = str(result.get("outcome"))
    colour = {"answered": "green", "insufficient_evidence": "yellow", "budget_exhausted": "yellow", "degraded": "red"}.get(outcome, "white")
    # The reason is a fixed code, printed as its fixed text; what a stage or the model
    # said is shown only labelled as the model's, never beside the verdict.
    reason = REASONS.get(str(result.get("reason") or ""), "")
    console.print(line("\n", (outcome, f"bold {colour}"), f"  ({reason})" if reason else ""), highlight=False)
    if result.get("model_note"):
        console.print(line(("model's note (unverified): ", "dim"), str(result["model_note"])), highlight=False)
    answer = result.get("answer")
    if answer:
        for s in answer["sentences"]:
            console.print(line("\n", s["text"]), highlight=False)
            for c in s["citations"]:
                ex = c["excerpt"]
                inside = f", {ex['place']}" if ex.get("place") else ""
                where = f"{c['message_id']} ({ex['part']}{inside} {ex['start']}-{ex['end']}):"
                console.print(line("   ", (where, "dim"), f" “{ex['text']}”"), highlight=False)
    for r in result.get("trace", {}).get("removed_sentences", []):
        why = f" ({r['reason']}{': ' + r['offending'] if r.get('offending') else ''}): {r['text']}"
        label = "replaced by the mail's sentence" if r.get("replaced") else "removed"
        console.print(line((label, "red"), why), highlight=False)
    for w in result.get("trace", {}).get("widen_attempts", []):
        console.print(line(("widen attempt refused", "red"), f" {w['tool']}: {w['detail']}"), highlight=False)
    if outcome == "degraded":
        for h in result.get("hits", [])[:5]:
            console.print(line(f"  {h['subject']} — {h['sender']} ", (h["message_id"], "dim")), highlight=False)
    u = result.get("usage", {})
    console.print(
        line((
            f"\n{u.get('steps', 0)} steps, {u.get('seconds', 0):.1f} s, {u.get('model_calls', 0)} model calls, "
            f"{u.get('prompt_tokens', 0) + u.get('completion_tokens', 0)} tokens, run {result.get('run_id')}",
            "dim",
        )),
        highlight=False,
    )


# Once a run has started, a cut stream (a gateway restarted by its supervisor, a proxy
# timeout) is followed again for this long before the command gives up.
RECONNECT_SECONDS = 30.0
RETRY_STATUSES = (409, 503)  # the key's first request still starting; a replica at capacity


def ask(console: Console | None, gateway_url: str, api_key: str, question: str) -> dict | None:
    """Stream a run, rendered on ``console`` (None: quietly); returns the finished run,
    or None if the stream ended early. A refusal, or a server that is not a pmsearch
    gateway, ends the command with one line (:mod:`pmsearch.cli.client`).

    The run is started with an ``Idempotency-Key`` of its own. When the stream is cut
    after the run started, the command follows the same run again: from its last event
    (``Last-Event-ID``) once the run id is known, else by sending the request again with
    the same key; events already shown are not shown twice."""
    follow = Follow(gateway_url, api_key, question)
    give_up = 0.0
    while True:
        try:
            return follow.stream(console)
        except Retry as retry:
            wait, cut = retry.seconds, None
        except (httpx.ConnectError, httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError, httpx.TimeoutException) as exc:
            if not follow.started:
                unreachable(gateway_url, exc)  # nothing there to begin with: say so at once
            wait, cut = 0.5, exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            unreachable(gateway_url, exc)
        if follow.reconnected():  # streaming again since the last cut: this cut gets its own window
            give_up = time.monotonic() + RECONNECT_SECONDS
        elif time.monotonic() > give_up:
            if cut is not None:
                unreachable(gateway_url, cut)
            fail(f"the gateway kept asking to retry for {RECONNECT_SECONDS:g} s; run {follow.run_id} may still finish")
        time.sleep(wait)


class Retry(Exception):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


class Follow:
    """One run's stream, from its start or from where it was cut."""

    def __init__(self, gateway_url: str, api_key: str, question: str) -> None:
        self.url = gateway_url
        self.auth = {"Authorization": f"Bearer {api_key}"}
        self.question = question
        self.key = f"cli-{uuid.uuid4().hex}"
        self.run_id: str | None = None
        self.last_id: str | None = None
        self.started = False  # the gateway accepted the request once
        self._streaming = False  # a stream was opened since reconnected() last asked

    def stream(self, console: Console | None) -> dict | None:
        if self.run_id is None:
            method, path = "POST", "/v1/search"
            body = {"query": self.question, "mode": "agentic"}
            headers = {**self.auth, "Idempotency-Key": self.key}
        else:
            method, path, body = "GET", f"/v1/runs/{self.run_id}/events", None
            headers = {**self.auth, **({"Last-Event-ID": self.last_id} if self.last_id else {})}
        with httpx.Client(timeout=httpx.Timeout(10, read=120)) as client:
            with connect_sse(client, method, f"{self.url}{path}", json=body, headers=headers) as source:
                resp = source.response
                if resp.status_code in RETRY_STATUSES and self.started and "retry-after" in resp.headers:
                    raise Retry(min(float(resp.headers["retry-after"]), 5.0))
                if resp.status_code >= 400:
                    resp.read()
                    refused(resp)
                self.started = self._streaming = True
                self.run_id = resp.headers.get("x-run-id", self.run_id)
                try:
                    for sse in source.iter_sse():
                        data = json.loads(sse.data) if sse.data else {}
                        if console is not None:
                            render_event(console, sse.event, data)
                        if sse.id:
                            self.last_id = sse.id
                        if sse.event == "done":
                            return data
                except (SSEError, ValueError):  # not an event stream, or not JSON in it
                    not_pmsearch(resp)
        return None

    def reconnected(self) -> bool:
        """Whether a stream was opened since the last call."""
        opened, self._streaming = self._streaming, False
        return opened
