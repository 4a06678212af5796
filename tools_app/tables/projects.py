"""Projects: a team's repositories, people, default policy and channels. Every session
belongs to exactly one; a person sees and decides only their projects' sessions
(tools_app/access.py). Membership is by group, so that an identity provider's group
claims (or an admin) give it."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import models

DEFAULT_PROJECT = "default"
REVIEWERS_GROUP = "reviewers"  # the default project's reviewers, as before projects


class Project(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    members = models.ManyToManyField(
        Group,
        blank=True,
        related_name="member_projects",
        help_text="Members of these groups see the project's sessions and calls and may "
        "start sessions in it.",
    )
    reviewers = models.ManyToManyField(
        Group,
        blank=True,
        related_name="reviewed_projects",
        help_text="Members of these groups also decide the project's calls.",
    )
    policy = models.ForeignKey(
        "tools_app.Policy",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="projects",
        help_text="The policy of its sessions when none is named (empty: `default`).",
    )
    repositories = models.JSONField(
        default=list,
        blank=True,
        help_text="Glob patterns of repository URLs or paths, e.g. `/srv/git/payments-*` or "
        "`https://git.example.com/payments/*`; a session on a matching repository is "
        "the project's (the longest matching pattern wins).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def default_project() -> Project:
    """The project of sessions no other project claims; made on first use, reviewed by
    the `reviewers` group (everyone who reviewed before projects existed)."""
    project, created = Project.objects.get_or_create(name=DEFAULT_PROJECT)
    if created:
        project.reviewers.add(Group.objects.get_or_create(name=REVIEWERS_GROUP)[0])
    return project


def default_project_id() -> int:
    return default_project().pk
