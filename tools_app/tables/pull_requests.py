"""Pull requests recorded in agentweb itself, for a repository with no forge."""

from __future__ import annotations

from django.db import models

from tools_app.core.rendering import spelled


class PullRequest(models.Model):
    """A pull request recorded in agentweb itself, for a repository with no forge."""

    # Who may read it follows its session. SET_NULL, not CASCADE: a pull request is a
    # record of what was pushed and proposed, kept when its session is deleted (then
    # only reviewers see it).
    session = models.ForeignKey(
        "tools_app.AgentSession",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="pull_requests",
    )
    repo_key = models.CharField(max_length=1000)
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=500)
    body = models.TextField(blank=True)
    base = models.CharField(max_length=255)
    head = models.CharField(max_length=255)
    draft = models.BooleanField(default=False)
    commits = models.JSONField(default=list)
    diff = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["repo_key", "number"], name="pull_number_per_repo"),
            models.UniqueConstraint(fields=["repo_key", "head"], name="one_pull_per_head"),
        ]

    def __str__(self) -> str:
        return spelled(f"#{self.number} {self.title}")
