"""The gateway: a session of an agent that runs its own tools (`kind` gateway, its `cwd`
and `external_id`), and a call's native tool, input and tool-use id."""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0012_verdict_names"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="cwd",
            field=models.CharField(blank=True, max_length=4096),
        ),
        migrations.AddField(
            model_name="agentsession",
            name="external_id",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.AddField(
            model_name="toolcall",
            name="hook_answered_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="toolcall",
            name="native_input",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="toolcall",
            name="native_tool",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name="toolcall",
            name="tool_use_id",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AlterField(
            model_name="agentsession",
            name="kind",
            field=models.CharField(
                choices=[
                    ("agent", "agent session"),
                    ("cli", "command line call"),
                    ("gateway", "agent gateway session"),
                ],
                default="agent",
                max_length=10,
            ),
        ),
        migrations.AddConstraint(
            model_name="agentsession",
            constraint=models.UniqueConstraint(
                condition=models.Q(("external_id", ""), _negated=True),
                fields=("creator", "external_id"),
                name="one_session_per_external_id",
            ),
        ),
        migrations.AddConstraint(
            model_name="toolcall",
            constraint=models.UniqueConstraint(
                condition=models.Q(("tool_use_id", ""), _negated=True),
                fields=("session", "tool_use_id"),
                name="one_call_per_native_tool_use",
            ),
        ),
    ]
