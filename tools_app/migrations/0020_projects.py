"""Projects (issue 34): every session belongs to one. The `default` project is made here,
reviewed by the `reviewers` group, and every existing session is put in it, so that who
sees and decides what is unchanged until an admin adds a second project."""

from typing import Any

import django.db.models.deletion
import tools_app.tables.projects
from django.db import migrations, models


def default_project_make(apps: Any, schema_editor: Any) -> None:
    project, _ = apps.get_model("tools_app", "Project").objects.get_or_create(name="default")
    group, _ = apps.get_model("auth", "Group").objects.get_or_create(name="reviewers")
    project.reviewers.add(group)


def sessions_into_default(apps: Any, schema_editor: Any) -> None:
    default = apps.get_model("tools_app", "Project").objects.get(name="default")
    apps.get_model("tools_app", "AgentSession").objects.update(project=default)


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("tools_app", "0019_approvals_quorum"),
    ]

    operations = [
        migrations.AddField(
            model_name="auditentry",
            name="project_name",
            field=models.CharField(blank=True, db_index=True, max_length=100),
        ),
        migrations.CreateModel(
            name="Project",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.SlugField(max_length=100, unique=True)),
                ("description", models.TextField(blank=True)),
                (
                    "repositories",
                    models.JSONField(
                        blank=True,
                        default=list,
                        help_text="Glob patterns of repository URLs or paths, e.g. `/srv/git/payments-*` or `https://git.example.com/payments/*`; a session on a matching repository is the project's (the longest matching pattern wins).",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "members",
                    models.ManyToManyField(
                        blank=True,
                        help_text="Members of these groups see the project's sessions and calls and may start sessions in it.",
                        related_name="member_projects",
                        to="auth.group",
                    ),
                ),
                (
                    "policy",
                    models.ForeignKey(
                        blank=True,
                        help_text="The policy of its sessions when none is named (empty: `default`).",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="projects",
                        to="tools_app.policy",
                    ),
                ),
                (
                    "reviewers",
                    models.ManyToManyField(
                        blank=True,
                        help_text="Members of these groups also decide the project's calls.",
                        related_name="reviewed_projects",
                        to="auth.group",
                    ),
                ),
            ],
            options={
                "ordering": ["name"],
            },
        ),
        migrations.RunPython(default_project_make, migrations.RunPython.noop),
        migrations.AddField(
            model_name="agentsession",
            name="project",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="sessions",
                to="tools_app.project",
            ),
        ),
        migrations.RunPython(sessions_into_default, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="agentsession",
            name="project",
            field=models.ForeignKey(
                default=tools_app.tables.projects.default_project_id,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="sessions",
                to="tools_app.project",
            ),
        ),
        migrations.AddField(
            model_name="apitoken",
            name="project",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="tools_app.project",
            ),
        ),
        migrations.AddField(
            model_name="channel",
            name="projects",
            field=models.ManyToManyField(
                blank=True, related_name="channels", to="tools_app.project"
            ),
        ),
        migrations.AlterField(
            model_name="auditentry",
            name="action",
            field=models.CharField(
                choices=[
                    ("decision", "Decision"),
                    ("rule.remember", "remembered rule"),
                    ("policy.change", "policy change"),
                    ("policy.delete", "policy deleted"),
                    ("skill.change", "skill change"),
                    ("skill.delete", "skill deleted"),
                    ("project.change", "project change"),
                    ("channel.change", "channel change"),
                    ("channel.delete", "channel deleted"),
                    ("token.create", "token created"),
                    ("token.revoke", "token revoked"),
                    ("session.cancel", "session cancelled"),
                    ("tool_call.outcome", "run outcome"),
                ],
                max_length=30,
            ),
        ),
    ]
