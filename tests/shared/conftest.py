from tests.fixtures.scripted_model import scripted_model  # noqa: F401 - a pytest fixture
