"""PolicySpec declares the policy's fields once; the model must store each of them."""

from __future__ import annotations

from django.db import models

from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.types import PLAIN_FIELDS
from tools_app.models import Policy

# Columns of the model that are not policy fields: its key, its own notes, its clock, the
# revision its rules' triggers write.
NOT_POLICY_FIELDS = {"id", "description", "updated_at", "rules_revision"}
COLUMN_TYPES = {
    "text": models.SlugField,
    "int": models.PositiveIntegerField,
    "bool": models.BooleanField,
    "list": models.JSONField,
}


def columns() -> dict[str, models.Field[object, object]]:
    return {
        column.name: column
        for column in Policy._meta.concrete_fields
        if column.name not in NOT_POLICY_FIELDS
    }


def test_the_model_stores_every_policy_field_and_nothing_else() -> None:
    assert set(columns()) == {spec_field.name for spec_field in PLAIN_FIELDS}


def test_each_column_has_its_field_s_kind_and_the_default_policy_s_default() -> None:
    stored = columns()
    for spec_field in PLAIN_FIELDS:
        column = stored[spec_field.name]
        assert type(column) is COLUMN_TYPES[spec_field.kind], spec_field.name
        if spec_field.name != "name":
            assert column.get_default() == DEFAULT_POLICY[spec_field.name], spec_field.name
