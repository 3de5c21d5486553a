"""deploy/kubernetes/, checked offline: every object against Kubernetes' own schema in
strict mode (an unknown field, or a kind without a schema, is an error), KEDA's objects
against KEDA's CRDs (tests/deploy/keda/), each ScaledObject's stream and group against
the code's stream table, and what the verifier may reach."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from kubernetes_validate import utils as k8s

from pmsearch.cli.acl import ACCOUNTS, compose_secrets
from pmsearch.cli.stack import WORKERS
from pmsearch.services.sync.config import SyncConfig
from pmsearch.shared import streams

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "deploy" / "kubernetes"
KEDA_CRDS = Path(__file__).parent / "keda"
K8S_VERSION = "1.33.0"


def documents() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(MANIFESTS.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        out += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return out


DOCS = documents()
OF_KIND: dict[str, list[dict[str, Any]]] = {}
for _, doc in DOCS:
    OF_KIND.setdefault(doc["kind"], []).append(doc)


def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    schemas = {}
    for path in KEDA_CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schemas[(f"{group}/{version['name']}", kind)] = version["schema"]["openAPIV3Schema"]
    return schemas


CRDS = _crd_schemas()


def _closed(schema: Any) -> Any:
    """The schema with every object that lists its properties closed to others, as the
    API server's strict field validation rejects unknown fields."""
    if isinstance(schema, dict):
        out = {k: _closed(v) for k, v in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema and not schema.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_closed(v) for v in schema]
    return schema


@pytest.mark.parametrize("doc", [d for _, d in DOCS], ids=[f"{f}:{d['kind']}/{d['metadata']['name']}" for f, d in DOCS])
def test_every_object_validates_strictly_against_its_schema(doc):
    key = (doc["apiVersion"], doc["kind"])
    if key in CRDS:
        jsonschema.validate(doc, _closed(CRDS[key]))
    else:
        k8s.validate(doc, K8S_VERSION, strict=True)  # SchemaNotFoundError for a kind it does not know


def test_the_keda_check_rejects_a_field_keda_does_not_know():
    (scaled, *_) = OF_KIND["ScaledObject"]
    wrong = {**scaled, "spec": {**scaled["spec"], "minReplicas": 1}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, _closed(CRDS[("keda.sh/v1alpha1", "ScaledObject")]))


def test_the_kustomization_names_every_manifest():
    listed = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in MANIFESTS.glob("*.yaml") if p.name != "kustomization.yaml")


def _deployments() -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"].removeprefix("pmsearch-"): d for d in OF_KIND["Deployment"]}


def test_every_stage_runs_its_own_module_as_its_own_redis_user_with_probes():
    deployments = _deployments()
    assert set(deployments) == {"gateway", *WORKERS}
    for stage, d in deployments.items():
        (container,) = d["spec"]["template"]["spec"]["containers"]
        module = "pmsearch.services.gateway.app" if stage == "gateway" else WORKERS[stage]
        assert container["command"] == ["python", "-m", module]
        env = {e["name"]: e for e in container["env"]}
        assert env["PM_REDIS_USERNAME"]["value"] == stage
        assert env["PM_REDIS_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == f"PM_REDIS_PASSWORD_{stage.upper()}"
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"]["port"] == (8080 if stage == "gateway" else 9100), (stage, probe)
        assert container["resources"]["requests"]["cpu"]


def test_only_the_planner_and_the_answerer_hold_model_settings():
    for stage, d in _deployments().items():
        (container,) = d["spec"]["template"]["spec"]["containers"]
        names = {e["name"] for e in container["env"]} | {
            ref["configMapRef"]["name"] for ref in container.get("envFrom", [])
        }
        holds = "PM_MODEL_API_KEY" in names or "pmsearch-model" in names
        assert holds is (stage in ("planner", "answerer")), stage


def test_every_secret_key_referenced_is_one_pmsearch_acl_writes():
    written = set(compose_secrets(dict.fromkeys(ACCOUNTS, "x"))) | {"PM_MODEL_API_KEY"}
    referenced = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("secretKeyRef")
            if ref:
                referenced.add(ref["key"])
            if node.get("name") == "pmsearch-secrets" and "key" in node:
                referenced.add(node["key"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for _, doc in DOCS:
        walk(doc)
    assert referenced and referenced <= written, referenced - written


def test_every_stage_input_stream_has_a_lag_trigger_naming_its_consumer_group():
    scaled = {d["spec"]["scaleTargetRef"]["name"].removeprefix("pmsearch-"): d for d in OF_KIND["ScaledObject"]}
    seen: dict[str, str] = {}
    for stage, obj in scaled.items():
        for trigger in obj["spec"]["triggers"]:
            assert trigger["type"] == "redis-sentinel-streams"
            meta = trigger["metadata"]
            assert streams.GROUP[meta["stream"]] == meta["consumerGroup"] == stage, meta
            assert "lagCount" in meta and meta["username"] == "keda"
            seen[meta["stream"]] = stage
    assert set(seen) == set(streams.GROUP) - {streams.LEGACY_DRAFTS}
    assert set(scaled) <= set(_deployments())


def test_the_sync_stage_runs_once_reads_its_sources_from_its_config_map_and_does_not_scale():
    sync = _deployments()["sync"]
    assert sync["spec"]["replicas"] == 1 and sync["spec"]["strategy"] == {"type": "Recreate"}
    pod = sync["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    (mount,) = container["volumeMounts"]
    (volume,) = pod["volumes"]
    assert env["PM_SYNC_CONFIG"] == f"{mount['mountPath']}/sync.yaml" and volume["configMap"]["name"] == "pmsearch-sync"
    (config,) = [c for c in OF_KIND["ConfigMap"] if c["metadata"]["name"] == "pmsearch-sync"]
    assert SyncConfig.model_validate(yaml.safe_load(config["data"]["sync.yaml"])) == SyncConfig()
    assert "sync" not in {d["spec"]["scaleTargetRef"]["name"].removeprefix("pmsearch-") for d in OF_KIND["ScaledObject"]}


def _selects(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    selector = policy["spec"]["podSelector"]
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        if expr["operator"] == "In" and labels.get(expr["key"]) not in expr["values"]:
            return False
    return True


def test_the_verifier_reaches_redis_its_sentinels_and_dns_and_nothing_else():
    verifier = _deployments()["verifier"]["spec"]["template"]["metadata"]["labels"]
    allowed = []
    for policy in OF_KIND["NetworkPolicy"]:
        if _selects(policy, verifier) and "Egress" in policy["spec"]["policyTypes"]:
            for rule in policy["spec"].get("egress", []):
                to = rule.get("to")
                assert to, f"{policy['metadata']['name']}: an egress rule to anywhere"
                allowed += [(str(peer), tuple(p["port"] for p in rule["ports"])) for peer in to]
    names = {peer for peer, _ in allowed}
    assert any("redis" in n for n in names) and any("sentinel" in n for n in names)
    assert all(any(k in peer for k in ("redis", "sentinel", "kube-system")) for peer in names), names
    assert {"default-deny"} <= {p["metadata"]["name"] for p in OF_KIND["NetworkPolicy"]}


def test_only_the_searcher_reaches_qdrant():
    (policy,) = [p for p in OF_KIND["NetworkPolicy"] if p["metadata"]["name"] == "qdrant"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "searcher"}}}]


def test_the_kubernetes_check_rejects_an_unknown_field_and_an_unknown_kind():
    deployment = OF_KIND["Deployment"][0]
    wrong = {**deployment, "spec": {**deployment["spec"], "replica": 2}}
    with pytest.raises(k8s.ValidationError):
        k8s.validate(wrong, K8S_VERSION, strict=True)
    with pytest.raises(k8s.SchemaNotFoundError):
        k8s.validate({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}, K8S_VERSION, strict=True)
