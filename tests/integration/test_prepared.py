"""Hot-path SELECTs compiled once (`sql/prepared.py`) give what the queryset gives:
the same models (with what select_related joins), the same converted values, on SQLite
and on PostgreSQL; a stand-in the SQL does not hold is refused when it is compiled."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db.models import QuerySet

from tools_app import services
from tools_app.models import ApiToken, Policy, PolicyRule
from tools_app.sql.prepared import Prepared

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def by_user(user: int, prefix: str) -> QuerySet[ApiToken]:
    return ApiToken.objects.select_related("user").filter(user_id=user, prefix=prefix)


TOKENS = Prepared(ApiToken, by_user, user=int, prefix=str)


def test_models_and_their_select_related_are_those_of_the_queryset(
    creator: User, django_assert_num_queries: Any
) -> None:
    services.api_token_create(user=creator, scope="agent", name="one")
    token = ApiToken.objects.get()
    found = TOKENS.models(user=creator.pk, prefix=token.prefix)
    assert [t.pk for t in found] == [token.pk]
    assert found[0].created_at == token.created_at  # a datetime, converted on SQLite too
    assert found[0].expires_at is None and found[0].name == "one"
    with django_assert_num_queries(0):  # the user came with it
        assert found[0].user.username == creator.username
    assert TOKENS.models(user=creator.pk, prefix="nothing") == []
    assert TOKENS.models(user=creator.pk + 1, prefix=token.prefix) == []


def test_rows_are_converted_as_values_list_converts_them() -> None:
    policy = Policy.objects.get(name="default")
    PolicyRule.objects.create(
        policy=policy, tool="run_command", args={"command": "ls *"}, decision="allow",
        hosts={"add": ["registry.npmjs.org"]}, remembered=True,
    )  # fmt: skip
    columns = ("tool", "args", "hosts", "remembered")
    rules = Prepared(
        PolicyRule,
        lambda policy: PolicyRule.objects.filter(policy_id=policy).values_list(*columns),
        policy=int,
    )
    expected = list(PolicyRule.objects.filter(policy=policy).values_list(*columns))
    assert rules.rows(policy=policy.pk) == expected
    assert ("run_command", {"command": "ls *"}, {"add": ["registry.npmjs.org"]}, True) in expected


def test_the_values_must_be_the_ones_named() -> None:
    with pytest.raises(TypeError, match="values for"):
        TOKENS.models(user=1)
    constant = Prepared(ApiToken, lambda prefix: ApiToken.objects.filter(prefix="x"), prefix=str)
    with pytest.raises(ValueError, match=r"do not hold the values \['prefix'\]"):
        constant.models(prefix="y")
