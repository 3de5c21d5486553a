import os
import secrets

# Settings objects built in tests (SearcherSettings(...) for an index) need a scope key;
# each session gets a random one, as a deployment must.
os.environ.setdefault("PM_SCOPE_KEY", secrets.token_urlsafe(32))

from tests.fixtures.redis_server import loopback_cluster, redis_client, redis_url, sync_redis  # noqa: F401,E402
from tests.fixtures.scripted_model import scripted_model  # noqa: F401,E402
from tests.fixtures.stack import acl_redis, api, demo_stack, stack_model  # noqa: F401,E402


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--redis-cluster", action="store_true",
        help="give tests using the redis fixture a three-primary Redis Cluster instead of one server",
    )
