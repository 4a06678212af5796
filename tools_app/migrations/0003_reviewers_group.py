"""Create the `reviewers` group: its members may decide tool calls (see access.py)."""

from __future__ import annotations

from django.db import migrations


def create_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name="reviewers")


def remove_group(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="reviewers").delete()


class Migration(migrations.Migration):
    dependencies = [
        ("tools_app", "0002_default_policy"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [migrations.RunPython(create_group, remove_group)]
