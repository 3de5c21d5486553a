from tests.fixtures.scripted_model import scripted_model  # noqa: F401
from tests.fixtures.stack import acl_redis, api, demo_stack, stack_model  # noqa: F401
from tests.fixtures.redis_server import redis_client, redis_url  # noqa: F401,E402
