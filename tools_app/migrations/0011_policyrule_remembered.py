"""`PolicyRule.remembered`: a rule made by "approve & remember" keeps the four-eyes rule.

Rules remembered before this column existed are the ones `policy_rule_remember` wrote:
they have an author and the reason "remembered by NAME"; they are marked too, so an
existing remembered rule stops approving its author's own sessions at once.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, models


def mark_remembered(apps: Any, schema_editor: Any) -> None:
    rules = apps.get_model("tools_app", "PolicyRule").objects
    rules.filter(created_by__isnull=False, reason__startswith="remembered by ").update(
        remembered=True
    )


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0009_builtin_skills")]

    operations = [
        migrations.AddField(
            model_name="policyrule",
            name="remembered",
            field=models.BooleanField(default=False),
        ),
        migrations.RunPython(mark_remembered, migrations.RunPython.noop),
    ]
