"""docker-compose.yml as compose reads it, checked without a Docker engine: valid against
the compose-spec schema, every service health-checked and started only after what it
needs is healthy, no silent default model endpoint, and a build context that leaves
local state out (.dockerignore). Exposure is checked in tests/security/test_compose.py.
"""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES: dict[str, dict] = COMPOSE["services"]
STAGES = ("searcher", "planner", "answerer", "verifier")


def compose_spec() -> dict:
    """The compose-spec JSON schema, as check-jsonschema vendors it."""
    path = resources.files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    return json.loads(path.read_text())


def test_the_file_is_valid_against_the_compose_spec_schema():
    schema = compose_spec()
    jsonschema.validators.validator_for(schema)(schema).validate(COMPOSE)


def test_the_schema_check_catches_a_misspelt_key():
    # So the test above cannot pass by validating nothing.
    broken = {**COMPOSE, "services": {**SERVICES, "redis": {**SERVICES["redis"], "helthcheck": {}}}}
    schema = compose_spec()
    with pytest.raises(jsonschema.ValidationError, match="helthcheck"):
        jsonschema.validators.validator_for(schema)(schema).validate(broken)


@pytest.mark.parametrize("name", list(SERVICES))
def test_every_service_has_a_healthcheck(name):
    check = SERVICES[name].get("healthcheck") or {}
    assert not check.get("disable")
    assert check.get("test") and check["test"][0] in ("CMD", "CMD-SHELL")


@pytest.mark.parametrize("name", [n for n in SERVICES if SERVICES[n].get("depends_on")])
def test_a_service_starts_only_after_what_it_needs_is_healthy(name):
    needs = SERVICES[name]["depends_on"]
    assert isinstance(needs, dict), "the short form starts a service as soon as its dependency has started"
    for dep, spec in needs.items():
        assert spec.get("condition") == "service_healthy", (name, dep)
        assert SERVICES[dep].get("healthcheck"), dep


@pytest.mark.parametrize("name", STAGES)
def test_a_stage_is_healthy_when_its_readyz_on_its_metrics_port_says_so(name):
    port = SERVICES[name]["environment"]["PM_METRICS_PORT"]
    test = " ".join(SERVICES[name]["healthcheck"]["test"])
    assert f"http://127.0.0.1:{port}/readyz" in test and "urlopen" in test


def test_the_gateway_is_healthy_when_its_readyz_says_so():
    port = SERVICES["gateway"]["ports"][0].rpartition(":")[2]
    assert f"http://127.0.0.1:{port}/readyz" in " ".join(SERVICES["gateway"]["healthcheck"]["test"])


def test_stages_wait_for_redis_and_the_searcher_also_for_qdrant():
    assert all("redis" in SERVICES[n]["depends_on"] for n in (*STAGES, "gateway"))
    assert "qdrant" in SERVICES["searcher"]["depends_on"]


@pytest.mark.parametrize("name", ["planner", "answerer"])
def test_compose_refuses_to_start_a_model_stage_without_a_model_endpoint(name):
    # ${VAR:?message}: compose stops with the message when the variable is unset or empty.
    assert re.fullmatch(r"\$\{PM_MODEL_BASE_URL:\?[^}]+\}", SERVICES[name]["environment"]["PM_MODEL_BASE_URL"])


@pytest.mark.parametrize("name", list(SERVICES))
def test_no_image_is_latest(name):
    assert not SERVICES[name]["image"].endswith(":latest") and ":" in SERVICES[name]["image"]


def test_logs_are_json_lines_in_compose():
    assert SERVICES["gateway"]["environment"]["PM_LOG_FORMAT"] == "json"


@pytest.mark.parametrize("path", [".venv", "var", "models", ".git", ".env", "deploy/redis/users.acl"])
def test_the_build_context_leaves_out_local_state_and_secrets(path):
    patterns = {line.strip().rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")}
    assert path in patterns
