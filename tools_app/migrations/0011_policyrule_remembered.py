"""`PolicyRule.remembered` and `reviewer_bounded`: a rule made by "approve & remember"
keeps the four-eyes rule, and a rule a reviewer widened stays within what a reviewer may
approve.

Rules remembered before these columns existed are the ones `policy_rule_remember` wrote:
they have an author and the reason "remembered by NAME"; they are marked remembered, so
an existing remembered rule stops approving its author's own sessions at once. Whether
one was widened, and by whom, was not recorded: those whose author cannot change
policies today (not a superuser, no `change_policy` permission, directly or through a
group) are marked reviewer-bounded too, failing closed; an admin may clear the mark.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models
from django.db.models import Q

POLICY_ADMIN = (
    Q(created_by__is_superuser=True)
    | Q(created_by__user_permissions__codename="change_policy")
    | Q(created_by__groups__permissions__codename="change_policy")
)


def mark_remembered(apps: Any, schema_editor: Any) -> None:
    rules = apps.get_model("tools_app", "PolicyRule").objects
    remembered = rules.filter(created_by__isnull=False, reason__startswith="remembered by ")
    remembered.update(remembered=True)
    admins = set(remembered.filter(POLICY_ADMIN).values_list("pk", flat=True))
    remembered.exclude(pk__in=admins).update(reviewer_bounded=True)


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0010_policy_command_timeout_limit")]

    operations = [
        migrations.AddField(
            model_name="policyrule",
            name="remembered",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="policyrule",
            name="reviewer_bounded",
            field=models.BooleanField(
                default=False,
                help_text="Widened by a reviewer who is not a policy admin: never allows a "
                "call that a protected or secret path, a risky or opaque command or a pull "
                "request sends to a person. Clear it to make the rule an admin's.",
            ),
        ),
        migrations.RunPython(mark_remembered, migrations.RunPython.noop),
    ]
