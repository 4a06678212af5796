"""Create the `default` policy (values from DESIGN.md and the core issue)."""

from __future__ import annotations

from django.db import migrations

DEFAULT_PROTECTED_PATHS = [
    ".env",
    ".env.*",
    ".github/**",
    "package.json",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "pyproject.toml",
    "requirements*.txt",
    "poetry.lock",
    "uv.lock",
    "Cargo.toml",
    "Cargo.lock",
    "go.mod",
    "go.sum",
    "Dockerfile",
    "*.pem",
    "*.key",
]


def create_default(apps, schema_editor):
    Policy = apps.get_model("tools_app", "Policy")
    Policy.objects.get_or_create(
        name="default",
        defaults={
            "description": "The policy sessions use unless they name another.",
            "protected_paths": DEFAULT_PROTECTED_PATHS,
            "blocked_commands": ["rm -rf /", "curl | sh"],
            "approval_commands": [],
            "max_diff_lines": 500,
            "require_approval_above": 200,
            "web_allow_hosts": [],
            "command_network": False,
            "require_distinct_reviewer": False,
            "approval_timeout_seconds": 3600,
        },
    )


def remove_default(apps, schema_editor):
    apps.get_model("tools_app", "Policy").objects.filter(name="default").delete()


class Migration(migrations.Migration):
    dependencies = [("tools_app", "0001_initial")]
    operations = [migrations.RunPython(create_default, remove_default)]
