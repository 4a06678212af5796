"""API tokens: bearer strings for agents and reviewers, kept only as their SHA-256."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A bearer token; only its SHA-256 is stored."""

    class Scope(models.TextChoices):
        AGENT = "agent"
        REVIEW = "review"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    # What its owner calls it ("laptop Claude Code"): a token is otherwise only its prefix.
    name = models.CharField(max_length=100, blank=True)
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.AGENT)
    # The project of the gateway sessions this token's hooks start (empty: by repository).
    project = models.ForeignKey(
        "tools_app.Project", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    token_hash = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)
    created_at = models.DateTimeField(auto_now_add=True)
    # None: never expires (every token made before expiry existed stays valid).
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.scope}) for {self.user}"

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now
