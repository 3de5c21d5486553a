from tests.fixtures.stack import acl_redis, demo_stack  # noqa: F401
from tests.fixtures.redis_server import redis_url  # noqa: F401,E402
