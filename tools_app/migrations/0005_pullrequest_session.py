"""Link a recorded pull request to the session that made it, so that who may read it
follows who may see that session (older pull requests have none: reviewers only)."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0004_policy_secret_paths"),
    ]

    operations = [
        migrations.AddField(
            model_name="pullrequest",
            name="session",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="pull_requests",
                to="tools_app.agentsession",
            ),
        ),
    ]
