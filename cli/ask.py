"""``pmsearch ask``: one agentic run, streamed live to the terminal."""

from __future__ import annotations

import json

import httpx
from httpx_sse import connect_sse
from rich.console import Console


def render_event(console: Console, event: str, data: dict) -> None:
    if event == "step":
        calls = data.get("calls") or []
        what = ", ".join(f"{c['tool']}({json.dumps(c['arguments'], ensure_ascii=False)[:80]})" for c in calls)
        action = data.get("action")
        line = f"step {data.get('step')} {data.get('kind', '')}"
        if what:
            line += f": {what}"
        elif action:
            line += f": {action}" + (f" ({data['reason']})" if data.get("reason") else "")
        console.print(f"[cyan]{line}[/cyan]", highlight=False, markup=True)
    elif event == "evidence":
        m = data.get("message", {})
        console.print(f"  [dim]evidence[/dim] {m.get('date', '')[:10]} {m.get('sender', '')}: {m.get('subject', '')} [dim]{m.get('message_id')}[/dim]", highlight=False)
    elif event == "done":
        render_result(console, data)


def render_result(console: Console, result: dict) -> None:
    outcome = result.get("outcome")
    colour = {"answered": "green", "insufficient_evidence": "yellow", "budget_exhausted": "yellow", "degraded": "red"}.get(outcome, "white")
    console.print(f"\n[bold {colour}]{outcome}[/bold {colour}]" + (f"  ({result['reason']})" if result.get("reason") else ""))
    answer = result.get("answer")
    if answer:
        for s in answer["sentences"]:
            console.print(f"\n{s['text']}", highlight=False)
            for c in s["citations"]:
                ex = c["excerpt"]
                console.print(f"   [dim]{c['message_id']} ({ex['part']} {ex['start']}-{ex['end']}):[/dim] “{ex['text']}”", highlight=False)
    for r in result.get("trace", {}).get("removed_sentences", []):
        console.print(f"[red]removed[/red] ({r['reason']}{': ' + r['offending'] if r.get('offending') else ''}): {r['text']}", highlight=False)
    for w in result.get("trace", {}).get("widen_attempts", []):
        console.print(f"[red]widen attempt refused[/red] {w['tool']}: {w['detail']}", highlight=False)
    if outcome == "degraded":
        for h in result.get("hits", [])[:5]:
            console.print(f"  {h['subject']} — {h['sender']} [dim]{h['message_id']}[/dim]", highlight=False)
    u = result.get("usage", {})
    console.print(
        f"\n[dim]{u.get('steps', 0)} steps, {u.get('seconds', 0):.1f} s, {u.get('model_calls', 0)} model calls, "
        f"{u.get('prompt_tokens', 0) + u.get('completion_tokens', 0)} tokens, run {result.get('run_id')}[/dim]"
    )


def ask(console: Console, gateway_url: str, api_key: str, question: str) -> dict | None:
    """Stream a run; returns the finished run, or None if the stream ended early."""
    with httpx.Client(timeout=httpx.Timeout(10, read=120)) as client:
        with connect_sse(
            client,
            "POST",
            f"{gateway_url}/v1/search",
            json={"query": question, "mode": "agentic"},
            headers={"Authorization": f"Bearer {api_key}"},
        ) as source:
            resp = source.response
            if resp.status_code >= 400:
                resp.read()
                body = resp.json()
                raise RuntimeError(f"{resp.status_code} {body.get('title')}: {body.get('detail')}")
            for sse in source.iter_sse():
                data = json.loads(sse.data) if sse.data else {}
                render_event(console, sse.event, data)
                if sse.event == "done":
                    return data
    return None
