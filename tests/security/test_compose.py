"""Compose exposure (issue 8, item 15), read from docker-compose.yml as compose reads it:
Qdrant only for the searcher and behind its API key, Redis and Qdrant unpublished on
internal networks, Grafana without default credentials, every image pinned.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

COMPOSE = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
SERVICES: dict[str, dict] = COMPOSE["services"]
NETWORKS: dict[str, dict] = COMPOSE.get("networks") or {}


def networks_of(name: str) -> list[str]:
    nets = SERVICES[name].get("networks") or ["default"]
    return list(nets) if isinstance(nets, (list, dict)) else [nets]


def members(network: str) -> set[str]:
    return {name for name in SERVICES if network in networks_of(name)}


def env_of(name: str) -> dict:
    return SERVICES[name].get("environment") or {}


def test_only_the_searcher_and_qdrant_hold_the_qdrant_api_key():
    holders = {n for n in SERVICES if any("QDRANT_API_KEY" in str(k) + str(v) or k == "QDRANT__SERVICE__API_KEY"
                                          for k, v in env_of(n).items())}
    assert holders == {"searcher", "qdrant"}
    assert env_of("qdrant")["QDRANT__SERVICE__API_KEY"].startswith("${PM_QDRANT_API_KEY:?")


def test_only_the_searcher_can_reach_qdrant():
    for net in networks_of("qdrant"):
        assert members(net) == {"qdrant", "searcher"}
        assert NETWORKS.get(net, {}).get("internal") is True


@pytest.mark.parametrize("name", ["redis", "qdrant"])
def test_redis_and_qdrant_are_unpublished_on_internal_networks(name):
    assert not SERVICES[name].get("ports")
    assert all(NETWORKS.get(net, {}).get("internal") is True for net in networks_of(name))


def test_only_the_model_calling_stages_the_imap_sync_and_published_services_reach_outside():
    outside = {net for net, cfg in NETWORKS.items() if not (cfg or {}).get("internal")}
    reaching = {name for name in SERVICES if set(networks_of(name)) & outside}
    assert reaching == {"gateway", "planner", "answerer", "sync", "prometheus", "grafana"}


def test_grafana_has_no_default_credentials():
    env = env_of("grafana")
    assert env["GF_SECURITY_ADMIN_PASSWORD"].startswith("${PM_GRAFANA_ADMIN_PASSWORD:?")
    assert str(env.get("GF_AUTH_ANONYMOUS_ENABLED")).lower() == "false"


@pytest.mark.parametrize("name", ["grafana", "prometheus"])
def test_monitoring_listens_on_loopback_only(name):
    assert all(str(p).startswith("127.0.0.1:") for p in SERVICES[name].get("ports") or [])


@pytest.mark.parametrize("name", list(SERVICES))
def test_every_image_is_pinned_to_a_version(name):
    image = SERVICES[name]["image"]
    tag = image.rpartition(":")[2] if ":" in image else ""
    assert re.match(r"v?\d+\.\d+\.\d+", tag), image


def test_redis_reads_its_acl_file_as_its_own_user_and_never_evicts():
    command = " ".join(SERVICES["redis"]["command"])
    # The host's users.acl is 0600 and not owned by the image's redis user: copy it as
    # root into a file the redis user owns before the entrypoint drops privileges.
    assert re.search(r"install .*-m 0600 -o redis -g redis /run/pmsearch/users.acl /etc/redis/users.acl", command)
    assert "exec docker-entrypoint.sh redis-server --aclfile /etc/redis/users.acl" in command
    assert "--maxmemory-policy noeviction" in command and "--maxmemory " in command
    assert "--appendonly yes" in command  # required: queued work and results survive a restart
    assert any(v.endswith("/run/pmsearch/users.acl:ro") for v in SERVICES["redis"]["volumes"])
