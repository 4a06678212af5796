"""The policy's answer is a verdict: `ToolCall.decision` becomes `ToolCall.verdict` (its
values unchanged); a person's answer stays a `Decision` row."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0011_policyrule_remembered"),
    ]

    operations = [
        migrations.RenameField(model_name="toolcall", old_name="decision", new_name="verdict"),
        migrations.AlterField(
            model_name="toolcall",
            name="verdict",
            field=models.CharField(
                blank=True,
                choices=[
                    ("allow", "Allow"),
                    ("deny", "Deny"),
                    ("require_approval", "Require Approval"),
                ],
                max_length=20,
            ),
        ),
    ]
