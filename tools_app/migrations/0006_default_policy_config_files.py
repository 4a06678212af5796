"""The `default` policy also protects package-manager and git configuration that can
make an approved command run programs of its choosing (`.npmrc` script-shell …)."""

from __future__ import annotations

from django.db import migrations

ADDED = [
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "pip.conf",
    ".pypirc",
    ".cargo/config*",
    ".bundle/config",
    ".gemrc",
    ".gitmodules",
]


def add_patterns(apps, schema_editor):
    Policy = apps.get_model("tools_app", "Policy")
    for policy in Policy.objects.filter(name="default"):
        missing = [p for p in ADDED if p not in policy.protected_paths]
        if missing:
            policy.protected_paths = [*policy.protected_paths, *missing]
            policy.save(update_fields=["protected_paths"])


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0005_pullrequest_session")]
    operations = [migrations.RunPython(add_patterns, migrations.RunPython.noop)]
