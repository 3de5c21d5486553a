"""The dashboards and alerts, proven against a real Prometheus scraping a real stack.

One module-wide scenario (it takes a couple of minutes): the stack as `pmsearch up` runs
it (every process its own metrics port, listed in the stack's file-based service
discovery), the scripted model, Prometheus scraping every second and evaluating a copy
of the shipped rules with ``for: 0s``. Runs happen, then faults are provoked: a forged
scope token (a scope refusal and a dead letter), a planner replica stopped (SIGSTOP)
holding an entry while the other replica has no free slot (the entry idles past the
reclaim time until the process continues), a failing model (the planner's breaker opens,
runs end degraded), a tenant at its daily cap, and a stage killed. Then every dashboard
query and every alert's signal must return series, and the alerts of the provoked faults
must fire (the stalled entry's while it stalls).

Print the panel table with ``pytest -s tests/deploy/test_prometheus.py``.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import httpx
import pytest
import redis
import yaml

from pmsearch.cli.stack import Stack
from pmsearch.shared import streams
from pmsearch.shared.bus import encode
from pmsearch.shared.messages import ToolBatchRequested, ToolCall
from pmsearch.shared.worker import Policy
from pmsearch.testing.brains import SEARCH, answer, honest, honest_answer, schema_title, sentence
from pmsearch.testing.dovecot import dovecot_server
from pmsearch.testing.scripted_model import Reply, ScriptedModel
from tests.deploy.stalled_planner import SLOW_SECONDS, STALLED, firing, stall_a_planner, wait_for, write_targets
from tests.fixtures.prometheus import Prometheus
from tests.fixtures.stack import DEMO, Api
from tests.services.sync.conftest import mail

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
DASHBOARDS = sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json"))
QUESTIONS = [
    "Did the insurer accept the Golf claim after we sent the photos?",
    "Who is handling the Golf claim at the insurer?",
    "Where does Spedition Hüber pick up from April?",
]
WORKERS = ("searcher", "planner", "answerer", "verifier")
# The alerts each provoked fault must fire, with the labels that say where.
EXPECTED_FIRING = {
    ("DeadLettersGrowing", "stream", "pm:tools"),
    ("ModelCircuitOpen", "job", "planner"),
    ("UnansweredShareHigh", "outcome", "degraded"),
    ("TenantCapNearlySpent", None, None),
    ("StageWithoutLiveConsumer", "job", "answerer"),
    ("MailboxNotSynced", "mailbox", "bob"),  # its IMAP password is wrong
}
# The not-synced alert's 15 minutes, shortened as `for:` is (rules_for_test).
NOT_SYNCED_SECONDS = 10
REPORT_SECONDS = Policy().report_seconds  # how often each worker sets its stream gauges
# Rules are evaluated every second; on a busy machine an evaluation, a scrape or a
# report may come late, so what the scenario provoked is waited for up to this long.
SETTLE_SECONDS = 60


def brain(body: dict) -> Reply:
    """Honest, except that every answer also carries an invented sentence, which the
    verifier removes (so removals by reason have data)."""
    if schema_title(body) == SEARCH:
        return honest()(body)
    honest_sentences = honest_answer(body)
    if not honest_sentences:
        return answer()
    refs = honest_sentences[0]["passages"]
    invented = sentence("The insurer paid 987,654 euros in cash on the same afternoon.", *refs)
    return answer(*honest_sentences, invented)


def failing(body: dict) -> Reply:
    return Reply(status=503, error="scripted outage")


def rules_for_test(workdir: Path) -> Path:
    """The shipped rules with every ``for:`` at 0 s: a provoked fault fires at the next
    evaluation instead of minutes later."""
    doc = yaml.safe_load(ALERTS.read_text())
    for group in doc["groups"]:
        group["interval"] = "1s"
        for rule in group["rules"]:
            rule.pop("for", None)
            if rule["alert"] == "MailboxNotSynced":
                rule["expr"] = rule["expr"].replace("> 900", f"> {NOT_SYNCED_SECONDS}")
    path = workdir / "alerts.yml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    """(stack, prometheus, api) after the scenario above ran."""
    from rich.console import Console

    from pmsearch.cli.demo import load_demo

    work = tmp_path_factory.mktemp("observed")
    with ScriptedModel(brain) as model, dovecot_server(work / "dovecot", {"alice": "alice-pw", "bob": "bob-pw"}) as imap:
        imap.deliver(mail(1))
        os.environ["OBSERVED_IMAP_PASSWORD"] = "alice-pw"
        os.environ["OBSERVED_IMAP_WRONG"] = "not-bobs-pw"
        sources = [{"tenant": "acme", "mailbox": name, "host": "127.0.0.1", "port": imap.imap_port, "tls": "starttls",
                    "ca_file": str(imap.cert), "user": name, "password_env": env, "idle": False, "poll_seconds": 2}
                   for name, env in (("alice", "OBSERVED_IMAP_PASSWORD"), ("bob", "OBSERVED_IMAP_WRONG"))]
        (work / "sync.yaml").write_text(yaml.safe_dump({"sources": sources}))
        stack = Stack(
            work / "stack",
            services=(*WORKERS, "sync"),
            extra_env={
                "PM_SYNC_CONFIG": str(work / "sync.yaml"),
                "PM_MODEL_BASE_URL": model.base_url, "PM_MODEL_OUTPUT": "json_schema", "PM_AGENT_MODEL": "scripted",
                "PM_MODEL_TIMEOUT_SECONDS": str(SLOW_SECONDS * 2), "PM_MODEL_RETRY_WAIT_SECONDS": "0.05",
                "PM_MODEL_RETRY_WAIT_MAX_SECONDS": "0.1",
                # Open stays open for the rest of the scenario.
                "PM_BREAKER_RESET_SECONDS": "600",
            },
        )
        prom = None
        try:
            stack.start()
            stack.demo_keys = load_demo(stack, DEMO, Console(quiet=True))
            prom_dir = work / "prometheus"
            prom_dir.mkdir()
            replicas = prom_dir / "replicas.json"  # processes the scenario adds to the stack's
            write_targets(replicas, [])
            prom = Prometheus(prom_dir, {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(rules_for_test(prom_dir))],
                "scrape_configs": [{
                    "job_name": "pmsearch",
                    "file_sd_configs": [
                        {"files": [str(stack.scrape_targets_path), str(replicas)], "refresh_interval": "1s"}
                    ],
                }],
            }).start()
            wait_for(lambda: len([t for t in prom.targets() if t["health"] == "up"]) == 6, "six targets up")
            api = Api(stack)
            run_scenario(stack, prom, api, model, replicas)
            yield stack, prom, api
        finally:
            if prom is not None:
                prom.stop()
            stack.stop()


def run_scenario(stack: Stack, prom: Prometheus, api: Api, model: ScriptedModel, replicas: Path) -> None:
    key = api.key("acme/alice")
    for question in QUESTIONS * 2:
        assert api.search(key, query=question, mode="agentic").status_code == 200
        time.sleep(1.1)  # runs spread over scrapes, as traffic is
    with api.http.stream(
        "POST", "/v1/search", json={"query": QUESTIONS[0], "mode": "agentic"},
        headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream"},
    ) as resp:
        assert resp.status_code == 200
        for _ in resp.iter_lines():
            pass
    # A tenant at its cap: one admission at 100% of it, then a refusal.
    capped = api.new_key(tenant_id="capped", principal="p", mailboxes=["x"], permissions=["search", "search:agentic"])
    api.tenant("capped", **{"search.agentic_daily_cap": 1})
    assert api.search(capped, query=QUESTIONS[1], mode="agentic").status_code == 200
    assert api.search(capped, query=QUESTIONS[1], mode="agentic").status_code == 429
    # A forged scope token on the searcher's tool stream: refused and dead-lettered.
    forged = ToolBatchRequested(
        run_id="0" * 32, tenant_id="acme", scope_token="forged", deadline=time.time() + 60, step=1,
        calls=[ToolCall(call_id="c1", tool="search", arguments={"query": "x"})],
    )
    admin: redis.Redis = stack.redis_client()
    admin.xadd(streams.TOOLS, encode(forged))
    wait_for(lambda: admin.xlen(streams.dead_letter(streams.TOOLS)) >= 1, "the forged batch's dead letter")
    # Before the model fails: the stalled replica's model call must get an answer.
    stall_a_planner(stack, prom, api, model, replicas, brain, QUESTIONS[:2])
    # The model fails: the planner's breaker opens, and these runs end degraded (4 of
    # 14 runs: past the alert's fifth).
    model.set_script(failing)
    for question in [*QUESTIONS, QUESTIONS[0]]:
        body = api.search(key, query=question, mode="agentic").json()
        assert body["outcome"] == "degraded", body
    # Every process reports its streams once more, and Prometheus has scraped that
    # report, before one stage goes away: its series end with the kill.
    reported = time.time() + REPORT_SECONDS
    wait_for(lambda: prom.query("up") and not prom.query(f"timestamp(up) < {reported}"),
             "a scrape of every process after its next report", step=0.2)
    wait_for(lambda: prom.query('sum(pm_runs_finished_total{outcome="degraded"}) >= 4'),
             "the degraded runs' results scraped", step=0.2)
    proc = stack.procs["answerer"]
    proc.kill()
    proc.wait()
    wait_for(lambda: prom.query('up{job="answerer"} == 0'), "the answerer's failed scrape")


def queries() -> list[tuple[str, str, str]]:
    """(source, title, expr) of every dashboard target and every alert's signal and expression."""
    out = []
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text())["panels"]:
            for target in panel.get("targets", []):
                out.append((path.name, panel["title"], target["expr"]))
    for group in yaml.safe_load(ALERTS.read_text())["groups"]:
        for rule in group["rules"]:
            out.append(("alerts.yml signal", rule["alert"], rule["annotations"]["signal"]))
    return out


def test_every_dashboard_query_and_alert_signal_returns_series(observed) -> None:
    _, prom, _ = observed
    rows: list[tuple] = []
    empty: list[str] = []

    def all_have_data() -> bool:
        rows.clear()
        empty.clear()
        for source, title, expr in queries():
            series = prom.query(expr)
            # A quantile of a histogram without observations is NaN: a series, but no line.
            finite = [s for s in series if math.isfinite(float(s["value"][1]))]
            nonzero = [s for s in finite if float(s["value"][1]) != 0]
            rows.append((source, title, expr, len(series), len(finite), len(nonzero)))
            if not finite:
                empty.append(f"{title}: {expr}")
        return not empty

    wait_for(all_have_data, lambda: "data for every query; without:\n" + "\n".join(empty),
             timeout=SETTLE_SECONDS, step=1)
    width = max(len(r[1]) for r in rows)
    print(f"\n{'panel / alert signal':<{width}} | series | finite | non-zero | query")
    for _, title, expr, n, f, nz in rows:
        print(f"{title:<{width}} | {n:>6} | {f:>6} | {nz:>8} | {expr}")


def test_the_verifier_reports_lag_and_pending_for_drafts(observed) -> None:
    _, prom, _ = observed
    for metric in ("pm_stream_lag", "pm_stream_pending", "pm_stream_pending_age_seconds", "pm_dead_letters"):
        assert prom.query(f'{metric}{{job="verifier", stream="pm:drafts:answerer"}}'), metric


def test_every_alert_expression_is_evaluated_by_prometheus(observed) -> None:
    _, prom, _ = observed
    rules = prom.http.get("/api/v1/rules").json()["data"]["groups"]
    evaluated = {r["name"]: r for g in rules for r in g["rules"]}
    shipped = [r["alert"] for g in yaml.safe_load(ALERTS.read_text())["groups"] for r in g["rules"]]
    assert sorted(evaluated) == sorted(shipped)
    for name, rule in evaluated.items():
        assert rule["health"] == "ok", f"{name}: {rule.get('lastError')}"


def test_provoked_faults_fire_their_alerts(observed) -> None:
    _, prom, _ = observed
    now: list[dict] = []

    def fired(name: str, label: str | None, value: str | None) -> list[dict]:
        return [a for a in now if a["alertname"] == name and (label is None or a.get(label) == value)]

    def missing() -> list[tuple]:
        now[:] = [a["labels"] for a in prom.alerts() if a["state"] == "firing"]
        return [expected for expected in EXPECTED_FIRING if not fired(*expected)]

    # The killed stage's alert needs an evaluation after its failed scrape.
    wait_for(lambda: not missing(), lambda: f"the provoked faults' alerts; not firing: {missing()}; firing: {now}",
             timeout=SETTLE_SECONDS, step=1)
    print("\nalert | provoked by | fired with")
    for name, label, value in sorted(EXPECTED_FIRING, key=lambda e: e[0]):
        print(f"{name} | {label}={value} | {fired(name, label, value)}")


def test_a_stalled_entry_fired_its_alert_until_its_consumer_continued(observed) -> None:
    """Seen firing through /api/v1/alerts during the scenario (it waited for that), and
    kept in Prometheus' own ALERTS series; not firing once the process continued."""
    _, prom, _ = observed
    name, label, stream = STALLED
    fired = prom.query(f'max_over_time(ALERTS{{alertname="{name}", alertstate="firing", {label}="{stream}"}}[1h])')
    assert fired, f"{name} never fired for {stream}"
    assert not firing(prom, name)


def test_healthy_parts_raise_no_alert(observed) -> None:
    """Only the provoked faults fire: no stage other than the killed one is reported
    without a consumer, no stream other than the forged one grows dead letters, and no
    entry but the stalled one ever idled past the reclaim time."""
    _, prom, _ = observed
    now = [a["labels"] for a in prom.alerts() if a["state"] == "firing"]
    assert [a for a in now if a["alertname"] == "StageWithoutLiveConsumer" and a.get("job") != "answerer"] == []
    assert [a for a in now if a["alertname"] == "DeadLettersGrowing" and a.get("stream") != "pm:tools"] == []
    assert [a for a in now if a["alertname"] == "MailboxNotSynced" and a.get("mailbox") != "bob"] == []
    name, label, stream = STALLED
    assert prom.query(f'max_over_time(ALERTS{{alertname="{name}", {label}!="{stream}"}}[1h])') == []


def test_every_stage_serves_liveness_and_readiness_on_its_metrics_port(observed) -> None:
    stack, _, _ = observed
    for name in WORKERS:
        if name == "answerer":
            continue  # killed by the scenario
        port = stack.metrics_ports[name]
        live = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=5)
        assert live.status_code == 200, (name, live.text)
        assert ready.status_code == 200, (name, ready.text)
        checks = ready.json()["checks"]
        assert {"redis", "groups", "consumers"} <= set(checks), (name, checks)
    assert "index" in httpx.get(f"http://127.0.0.1:{stack.metrics_ports['searcher']}/readyz").json()["checks"]
    # The planner's model endpoint still answers HTTP (with errors): reachable.
    assert httpx.get(f"http://127.0.0.1:{stack.metrics_ports['planner']}/readyz").json()["checks"]["model"] == "ok"
    # The sync stage: one source syncs, one has a wrong password: ready, and says so.
    sync = httpx.get(f"http://127.0.0.1:{stack.metrics_ports['sync']}/readyz", timeout=5)
    assert sync.status_code == 200 and sync.json()["checks"] == {"redis": "ok", "sources": "ok"}
    gateway = httpx.get(f"{stack.gateway_url}/readyz", timeout=5)
    assert gateway.status_code == 200 and gateway.json()["checks"] == {"redis": "ok", "watchdog": "ok"}


def test_the_stack_lists_every_process_for_service_discovery(observed) -> None:
    stack, prom, _ = observed
    listed = json.loads(stack.scrape_targets_path.read_text())
    assert sorted(g["labels"]["job"] for g in listed) == sorted([*WORKERS, "sync", "gateway"])
    discovered = {t["labels"]["job"] for t in prom.targets()}
    assert discovered == {*WORKERS, "sync", "gateway"}
