"""The shipped Prometheus configuration, alert rules and Grafana dashboard, checked with
Prometheus' own promtool and against the fields Grafana needs of every panel."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.fixtures.prometheus import promtool

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "deploy" / "prometheus"
DASHBOARDS = sorted((ROOT / "deploy" / "grafana" / "dashboards").glob("*.json"))
DATASOURCE = {"type": "prometheus", "uid": "prometheus"}


def test_promtool_accepts_the_alert_rules() -> None:
    done = promtool("check", "rules", str(PROMETHEUS / "alerts.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", ["prometheus.yml", "local.yml"])
def test_promtool_accepts_the_prometheus_configuration(name: str) -> None:
    # --syntax-only: local.yml's service-discovery file exists once `pmsearch up` ran.
    done = promtool("check", "config", "--syntax-only", str(PROMETHEUS / name))
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_has_a_signal_a_summary_and_a_severity() -> None:
    rules = [r for g in yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"] for r in g["rules"]]
    assert rules
    for rule in rules:
        assert {"signal", "summary"} <= set(rule["annotations"]), rule["alert"]
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}, rule["alert"]


def test_grafana_provisions_the_datasource_the_dashboards_name() -> None:
    provisioned = yaml.safe_load((ROOT / "deploy/grafana/provisioning/datasources/prometheus.yml").read_text())
    assert {"type": "prometheus", "uid": "prometheus"}.items() <= provisioned["datasources"][0].items()


@pytest.mark.parametrize("path", DASHBOARDS, ids=[p.name for p in DASHBOARDS])
def test_dashboard_panels_have_what_grafana_needs(path: Path) -> None:
    board = json.loads(path.read_text())
    assert {"title", "uid", "schemaVersion", "panels"} <= set(board)
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    charts = [p for p in board["panels"] if p["type"] != "row"]
    assert charts
    for panel in charts:
        assert panel["type"] in {"timeseries", "stat", "gauge", "bargauge", "table"}, panel["title"]
        assert panel["datasource"] == DATASOURCE, panel["title"]
        grid = panel["gridPos"]
        assert {"h", "w", "x", "y"} <= set(grid) and grid["x"] + grid["w"] <= 24, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip() and re.fullmatch(r"[A-Z]", target["refId"]), panel["title"]
            assert target.get("datasource", DATASOURCE) == DATASOURCE, panel["title"]
