"""The MCP connections of `/mcp` (an `Mcp-Session-Id` each), kept where every web process
reads them: a client's requests may reach any of the web processes behind the proxy, and
each process serves a connection another one opened (`api/mcp_sessions.py`)."""

from __future__ import annotations

from django.db import models


class McpConnection(models.Model):
    """One MCP client's connection over streamable HTTP, from its `initialize` to its
    DELETE (or a week unused)."""

    # The `Mcp-Session-Id` the SDK made (a random UUID's hex). Alone it grants nothing: each
    # request also needs the bearer token that opened the connection.
    session_key = models.CharField(max_length=64, unique=True)
    token = models.ForeignKey("tools_app.ApiToken", on_delete=models.CASCADE, related_name="+")
    # The connection's last `start_session`: the session of its calls that name none.
    default_session = models.ForeignKey(
        "tools_app.AgentSession", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    opened_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["last_used_at"], name="mcp_connection_last_used")]

    def __str__(self) -> str:
        return f"MCP connection {self.session_key[:8]}… of token {self.token_id}"
