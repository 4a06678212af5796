"""agentweb's MCP server on standard input and output, for an MCP client that starts it.

It acts as the user of the API token in `AGENTWEB_TOKEN` (the same token as for `/mcp`
and the REST API), or, for someone who runs agentweb on their own machine, as the user
named by `--user` with an agent token's rights. The token is read from the environment
only: a command line is visible to every user of the machine. Standard output carries
the protocol alone; messages go to standard error. The whole process is one connection,
in either era of the protocol (2026-07-28, or the initialize handshake): its last
`start_session` is the default session.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from mcp.server.runner import serve_dual_era_loop
from mcp.server.stdio import stdio_server

from tools_app.api.mcp_callers import Principal
from tools_app.api.mcp_server import build_server
from tools_app.models import ApiToken
from tools_app.services import tokens

TOKEN_VARIABLE = "AGENTWEB_TOKEN"  # noqa: S105  (a variable's name)


class Command(BaseCommand):
    help = (
        f"Serve agentweb's tools over MCP on stdin/stdout, as the user of the API token in "
        f"{TOKEN_VARIABLE} (or --user USERNAME, with an agent token's rights)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--user", help=f"Act as this user (agent rights) instead of {TOKEN_VARIABLE}'s."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        who = _principal(options["user"], os.environ.get(TOKEN_VARIABLE, "").strip())
        self.stderr.write(f"agentweb MCP on stdio, as {who.user.get_username()} ({who.scope})")
        server = build_server(lambda ctx: who)

        async def serve() -> None:
            # Either era, as the client opens: 2026-07-28 or the handshake, one process,
            # one connection whose last start_session is the default session either way.
            async with (
                stdio_server() as (read_stream, write_stream),
                server.lifespan(server) as state,
            ):
                options = server.create_initialization_options()
                await serve_dual_era_loop(
                    server, read_stream, write_stream, lifespan_state=state, init_options=options
                )

        anyio.run(serve)


def _principal(username: str | None, token: str) -> Principal:
    if username:
        user = get_user_model().objects.filter(username=username).first()
        if user is None or not user.is_active:
            raise CommandError(f"There is no active user named {username!r}.")
        return Principal(user=user, scope=ApiToken.Scope.AGENT, connection="stdio")
    if not token:
        raise CommandError(
            f"No credentials: set {TOKEN_VARIABLE} to an API token "
            "(`manage.py create_api_token USERNAME`), or pass --user USERNAME."
        )
    found = tokens.api_token_verify(token=token)
    if isinstance(found, str):
        raise CommandError(f"{TOKEN_VARIABLE} is not a valid token: {found}.")
    return Principal(user=found.user, scope=found.scope, connection="stdio")
