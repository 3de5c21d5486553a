from tests.fixtures.stack import acl_redis, demo_stack  # noqa: F401
