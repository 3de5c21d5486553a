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
    parser.addoption(
        "--stream-partitions", type=int, default=1,
        help="split every stage stream into this many partitions (PM_STREAM_PARTITIONS)",
    )


def pytest_configure(config) -> None:
    count = config.getoption("--stream-partitions")
    if count != 1:
        # Through the environment too: each settings object a test builds (and each
        # process it starts) connects with the same count.
        os.environ["PM_STREAM_PARTITIONS"] = str(count)
        from pmsearch.shared.streams import set_partitions  # noqa: PLC0415 - after the option is read

        set_partitions(count)
