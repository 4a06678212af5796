"""A policy's `builtin_approvals`: how many people approve a call a built-in check
sends to a person (1, as before)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0020_projects"),
    ]

    operations = [
        migrations.AddField(
            model_name="policy",
            name="builtin_approvals",
            field=models.PositiveIntegerField(
                default=1,
                help_text="How many distinct people (none the session's creator) approve a call a built-in check sends to a person; a rule's own approvals say it for its calls.",
            ),
        ),
    ]
