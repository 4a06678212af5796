"""Credentials the egress proxy adds to a command's requests, outside the sandbox.

The secret is write-only: an admin sets or replaces it, nothing shows it back (not the
admin, the API, an export, a log or the audit trail, which says "set" or "replaced").
It is read once per run, by `selectors/credentials.py`, into the grant the proxy gets;
it is never stored on a call.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class EgressCredential(models.Model):
    host = models.CharField(
        max_length=260,
        help_text="The host (or *.domain) whose requests get the header, e.g. "
        "`npm.example.com`; a host some policy lets commands reach.",
    )
    header = models.CharField(
        max_length=100, default="Authorization", help_text="The request header it sets."
    )
    secret = models.TextField(help_text="The header's value, e.g. `Bearer …`. Never shown.")
    project = models.ForeignKey(
        "tools_app.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="egress_credentials",
        help_text="Only this project's sessions use it (empty: every project's).",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["host", "id"]

    def __str__(self) -> str:
        return f"{self.header} for {self.host}"
