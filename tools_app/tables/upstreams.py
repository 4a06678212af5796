"""Third-party MCP servers behind agentweb's `/mcp` (docs/mcp.md): each server an admin
registered, and each of its tools as pinned: the definition an admin accepted and the
one the server lists now. A tool whose two differ is held: unavailable until an admin
accepts the new definition."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class UpstreamServer(models.Model):
    class Kind(models.TextChoices):
        STDIO = "stdio", "stdio (a command, run in agentweb's sandbox)"
        HTTP = "http", "streamable HTTP (a URL)"

    name = models.SlugField(
        max_length=40,
        unique=True,
        help_text="SERVER in the tools' names: `SERVER__TOOL` to agents, `mcp.SERVER.TOOL` "
        "in the policy's rules.",
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.STDIO)
    command = models.JSONField(
        default=list, blank=True, help_text="stdio: the program and its arguments."
    )
    url = models.CharField(max_length=2000, blank=True, help_text="http: the server's URL.")
    environment = models.JSONField(
        default=dict, blank=True, help_text="stdio: variables the server gets (not secret)."
    )
    readonly_paths = models.JSONField(
        default=list,
        blank=True,
        help_text="stdio: what its installation needs to be read (a virtualenv, a "
        "node_modules folder); nothing else of the host is shown but the OS's folders.",
    )
    writable_paths = models.JSONField(
        default=list, blank=True, help_text="stdio: folders it may change (a repository)."
    )
    network_hosts = models.JSONField(
        default=list,
        blank=True,
        help_text="stdio: the hosts it may reach (`api.github.com`, `*.example.com`), through "
        "agentweb's egress proxy; empty: no network at all.",
    )
    credential_name = models.CharField(
        max_length=200,
        blank=True,
        help_text="http: the header agentweb adds (Authorization); stdio: the variable.",
    )
    credential_value = models.TextField(blank=True)
    project = models.ForeignKey(
        "tools_app.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="upstreams",
        help_text="Only this project's sessions use it (empty: every project's).",
    )
    enabled = models.BooleanField(default=True)
    last_error = models.TextField(blank=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_listed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP upstream server"

    def __str__(self) -> str:
        return self.name


class UpstreamTool(models.Model):
    class Pin(models.TextChoices):
        ACCEPTED = "accepted"
        NEW = "new", "new: awaits an admin"
        CHANGED = "changed", "changed: awaits an admin"
        VANISHED = "vanished", "vanished: no longer listed"

    server = models.ForeignKey(UpstreamServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=200)
    pin = models.CharField(max_length=10, choices=Pin.choices, default=Pin.NEW)
    listed = models.JSONField(null=True, blank=True, help_text="As the server lists it now.")
    listed_fingerprint = models.CharField(max_length=64, blank=True)
    accepted = models.JSONField(null=True, blank=True, help_text="As an admin accepted it.")
    accepted_fingerprint = models.CharField(max_length=64, blank=True)
    flags = models.JSONField(default=list, blank=True)
    accepted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    accepted_at = models.DateTimeField(null=True, blank=True)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["server__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="upstream_tool_once")
        ]
        verbose_name = "MCP upstream tool"

    def __str__(self) -> str:
        return f"{self.server.name}__{self.name}"
