"""The index contract suite against a real Qdrant server, and the agentic end-to-end
suite against a containerised Redis, both started with testcontainers from the images
docker-compose.yml pins. Without a reachable Docker engine the module is skipped, with
the reason.

Run: ``.venv/bin/python -m pytest tests/containers`` on a machine whose Docker engine the
user can reach (``DOCKER_HOST`` is honoured).
"""

from __future__ import annotations

import inspect
import secrets
import uuid
from pathlib import Path

import docker
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _no_engine_reason() -> str | None:
    try:
        docker.from_env(timeout=5).ping()
    except Exception as exc:  # noqa: BLE001 - whatever the client says, there is no engine to use
        return f"no Docker engine reachable ({type(exc).__name__}: {str(exc)[:160]})"
    return None


REASON = _no_engine_reason()
if REASON:
    pytest.skip(REASON, allow_module_level=True)

# Only past the skip: these import the suites, which load their fixtures.
from qdrant_client import QdrantClient  # noqa: E402
from testcontainers.community.qdrant import QdrantContainer  # noqa: E402
from testcontainers.core.container import DockerContainer  # noqa: E402

from pmsearch.cli.acl import render  # noqa: E402
from pmsearch.cli.private import write_private  # noqa: E402
from pmsearch.cli.stack import Stack  # noqa: E402
from pmsearch.services.searcher.index.server import ServerIndex  # noqa: E402
from tests.e2e import test_agentic as agentic_suite  # noqa: E402
from tests.fixtures.stack import DEMO, Api, scripted_stack_env  # noqa: E402
from tests.services.searcher.index import test_contract as contract_suite  # noqa: E402
from tests.services.searcher.index.conftest import DIM, corpus, embedder  # noqa: E402,F401

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
REDIS_IMAGE = COMPOSE["redis"]["image"]
QDRANT_IMAGE = COMPOSE["qdrant"]["image"]


def _adopt(suite, wanted) -> None:
    """Collect ``suite``'s tests here too (their marks come along), those ``wanted`` picks."""
    for name, test in vars(suite).items():
        if name.startswith("test_") and callable(test) and wanted(inspect.signature(test)):
            globals()[name] = test


# -- the index contract against a Qdrant server ---------------------------------------


@pytest.fixture(scope="module")
def qdrant():
    with QdrantContainer(QDRANT_IMAGE, api_key=secrets.token_urlsafe(24)) as server:
        yield server


@pytest.fixture
def index(qdrant, corpus):  # noqa: F811 - the suite's `index`, on the real server
    client = QdrantClient(url=f"http://{qdrant.rest_host_address}", api_key=qdrant._api_key, https=False)
    name = f"mail_{uuid.uuid4().hex[:12]}"
    idx = ServerIndex(client, name, DIM)
    idx.upsert(corpus)
    yield idx
    client.delete_collection(name)
    idx.close()


# Every contract test written against the `index` fixture; the adapter-specific ones
# (Edge on disk, the in-memory stand-in) stay in their own module.
_adopt(contract_suite, lambda sig: "index" in sig.parameters)


# -- the agentic suite against Redis in a container -------------------------------------


class ContainerStack(Stack):
    """The test stack with Redis in a container of the compose image, started the way
    compose starts it (the ACL file copied in as root, owned by the image's redis user)."""

    container: DockerContainer | None = None

    @property
    def redis_url(self) -> str:
        if self.container is None:
            return super().redis_url
        host = self.container.get_container_host_ip()
        return f"redis://{host}:{self.container.get_exposed_port(6379)}/0"

    def start_redis(self) -> None:
        acl = self.var_dir / "redis" / "users.acl"
        acl.parent.mkdir(parents=True, exist_ok=True)
        write_private(acl, render(self.secrets.passwords))
        command = " ".join(COMPOSE["redis"]["command"]).replace("${PM_REDIS_MAXMEMORY:-1gb}", "1gb")
        self.container = (
            DockerContainer(REDIS_IMAGE)
            .with_exposed_ports(6379)
            .with_volume_mapping(str(acl), "/run/pmsearch/users.acl", "ro")
            .with_kwargs(entrypoint=COMPOSE["redis"]["entrypoint"])
            .with_command([command])
        )
        self.container.start()
        self._wait(lambda: self.redis_client().ping(), "redis in its container", 60)

    def stop(self) -> None:
        super().stop()
        if self.container is not None:
            self.container.stop()


@pytest.fixture(scope="module")
def demo_stack(tmp_path_factory, stack_model):
    from rich.console import Console

    from pmsearch.cli.demo import load_demo

    stack = ContainerStack(tmp_path_factory.mktemp("container-stack"), extra_env=scripted_stack_env(stack_model.base_url))
    try:
        stack.start()
        stack.demo_keys = load_demo(stack, DEMO, Console(quiet=True))
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="module")
def api(demo_stack) -> Api:
    return Api(demo_stack)


fresh_budgets = agentic_suite.fresh_budgets
_adopt(agentic_suite, lambda sig: True)
