"""Approvals that need several people: a require_approval rule's quorum (`approvals`
of group `approvers`), copied onto each call it sends to a person, and each person's yes
(`Approval`) until the quorum is complete. Existing rules and calls need one approval
from any reviewer, as before."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0018_token_names_and_expiry"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="policyrule",
            name="approvals",
            field=models.PositiveSmallIntegerField(
                default=1,
                help_text="How many distinct people must approve (require_approval only).",
            ),
        ),
        migrations.AddField(
            model_name="policyrule",
            name="approvers",
            field=models.CharField(
                blank=True,
                help_text="The group they must belong to (empty: any reviewer).",
                max_length=150,
            ),
        ),
        migrations.AddField(
            model_name="toolcall",
            name="approvals_needed",
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AddField(
            model_name="toolcall",
            name="approvers",
            field=models.CharField(blank=True, max_length=150),
        ),
        migrations.CreateModel(
            name="Approval",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("preview_hash", models.CharField(max_length=64)),
                ("via", models.CharField(blank=True, max_length=20)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "tool_call",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="approvals",
                        to="tools_app.toolcall",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "ordering": ["tool_call", "id"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("tool_call", "user"), name="one_approval_per_person"
                    )
                ],
            },
        ),
    ]
