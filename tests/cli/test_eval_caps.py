"""``pmsearch eval`` refuses up front when a tenant's daily cap cannot take its runs,
against the real stack."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from pmsearch.cli.evaluation.command import check_caps
from pmsearch.cli.evaluation.questions import EvalInputError, Question
from pmsearch.shared.settings import CliSettings


def questions(n: int) -> list[Question]:
    return [
        Question(id=f"q{i}", key="globex/carol", kind="unanswerable", question=f"Question {i}?", facts=[], supporting=[])
        for i in range(n)
    ]


@pytest.fixture
def globex_cap(api):
    used = api.http.get("/v1/admin/tenants/globex/usage", headers=api.admin_headers).json()["runs_used"]
    api.tenant("globex", **{"search.agentic_daily_cap": used + 2})
    yield
    api.tenant("globex", **{"search.agentic_daily_cap": 500})


def settings_for(demo_stack, tmp_path) -> CliSettings:
    return CliSettings(var_dir=tmp_path, admin_token=SecretStr(demo_stack.secrets.admin_token))


def test_an_evaluation_larger_than_the_cap_left_is_refused_before_it_asks(demo_stack, globex_cap, tmp_path):
    with pytest.raises(EvalInputError, match=r"tenant globex has 2 agentic runs left today and this evaluation needs 3"):
        check_caps(demo_stack.gateway_url, settings_for(demo_stack, tmp_path), questions(3), 1)


def test_an_evaluation_within_the_cap_goes_ahead(demo_stack, globex_cap, tmp_path):
    check_caps(demo_stack.gateway_url, settings_for(demo_stack, tmp_path), questions(1), 2)


def test_without_the_admin_token_the_cap_is_not_checked(demo_stack, globex_cap, tmp_path):
    check_caps(demo_stack.gateway_url, CliSettings(var_dir=tmp_path), questions(50), 2)
