"""The MCP upstreams' side of agentweb's MCP server: their tools in `tools/list` (each
listing also pins what the servers list now), and their resources and prompts passed
through read-only to a caller who may use the server.

A listing talks to the servers from this process (daphne, or `mcp_stdio`'s) through
the pool's own event loop: a slow server delays only the listing that waits for it.
A call of `SERVER__TOOL` never runs here: it is stored as `mcp.SERVER.TOOL` and judged,
held and forwarded by the worker like every other tool call (`mcp_server._tool_call`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.client import Client
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from tools_app import access
from tools_app.core.upstreams.definitions import listed_name, split_listed
from tools_app.core.upstreams.pool import Endpoint, UpstreamUnavailable
from tools_app.models import AgentSession
from tools_app.selectors.upstreams import available_tool_schemas
from tools_app.services import upstreams

logger = logging.getLogger(__name__)

T = TypeVar("T")
RESOURCE_SCHEME = "agentweb-upstream"  # agentweb-upstream://SERVER/<the server's URI, quoted>
LISTING_SECONDS = 30.0


class NotUsable(Exception):
    """A name or URI that no server the caller may use answers to."""


@dataclass(frozen=True)
class Reachable:
    server_id: int
    name: str
    endpoint: Endpoint | str  # how to reach it, or why it cannot be reached


def reachable(user: Any, session: AgentSession | None) -> list[Reachable]:
    """The servers the caller may use, each with its endpoint (ORM work: call via `db_thread`)."""
    servers = access.usable_upstreams(user, session)
    return [Reachable(s.pk, s.name, upstreams.upstream_endpoint(s)) for s in servers]


async def listed_tool_schemas(
    servers: list[Reachable], db: Callable[..., Callable[..., Awaitable[Any]]]
) -> list[dict[str, Any]]:
    """Every server listed now (and its pins updated), then the tools available."""
    await asyncio.gather(*(_list_and_record(server, db) for server in servers))
    return list(await db(available_tool_schemas)([s.server_id for s in servers]))


async def _list_and_record(server: Reachable, db: Callable[..., Any]) -> None:
    if isinstance(server.endpoint, str):
        await db(_record)(server.server_id, None, f"Not started: {server.endpoint}.")
        return
    try:
        listed = await _on_pool(server.endpoint, upstreams.listed_tools)
    except Exception as exc:  # any failure is the server's, shown on the admin page
        await db(_record)(server.server_id, None, _failure(exc))
        return
    started = upstreams.upstream_pool().started_at(server.endpoint)
    await db(_record)(server.server_id, listed, "", started)


def _record(
    server_id: int, listed: list[dict[str, Any]] | None, error: str, started: float | None = None
) -> None:
    upstreams.upstream_listing_record(
        server_id=server_id, listed=listed, error=error, started_at=started
    )


async def _on_pool(endpoint: Endpoint, operation: Callable[[Client], Awaitable[T]]) -> T:
    pool = upstreams.upstream_pool()  # every request here only reads: sent again after a crash
    future = pool.submit(endpoint, operation, timeout=LISTING_SECONDS, retry=True)
    return await asyncio.wrap_future(future)


def _failure(exc: BaseException) -> str:
    if isinstance(exc, UpstreamUnavailable):
        return str(exc)
    return f"listing its tools failed: {type(exc).__name__}: {exc}"


# --- resources and prompts, read-only ----------------------------------------------------


async def list_resources(servers: list[Reachable]) -> list[types.Resource]:
    async def fetch(client: Client) -> list[types.Resource]:
        return list((await client.list_resources()).resources)

    def renamed(server: str, resource: types.Resource) -> types.Resource:
        uri = f"{RESOURCE_SCHEME}://{server}/{quote(str(resource.uri), safe='')}"
        return resource.model_copy(update={"uri": uri, "name": listed_name(server, resource.name)})

    return await _from_each(servers, fetch, renamed)


async def read_resource(servers: list[Reachable], uri: str) -> types.ReadResourceResult:
    prefix = f"{RESOURCE_SCHEME}://"
    if not uri.startswith(prefix) or "/" not in uri[len(prefix) :]:
        raise NotUsable(f"No MCP upstream serves {uri!r}.")
    name, _, quoted = uri[len(prefix) :].partition("/")
    server = _named(servers, name)
    original = unquote(quoted)
    return await _on_pool(server, lambda client: client.read_resource(original))


async def list_prompts(servers: list[Reachable]) -> list[types.Prompt]:
    async def fetch(client: Client) -> list[types.Prompt]:
        return list((await client.list_prompts()).prompts)

    def renamed(server: str, prompt: types.Prompt) -> types.Prompt:
        return prompt.model_copy(update={"name": listed_name(server, prompt.name)})

    return await _from_each(servers, fetch, renamed)


async def _from_each(
    servers: list[Reachable],
    fetch: Callable[[Client], Awaitable[list[T]]],
    renamed: Callable[[str, T], T],
) -> list[T]:
    """What every reachable server lists, named as agentweb serves it; a server that
    fails hides only its own items."""

    async def one(server: Reachable) -> list[T]:
        if isinstance(server.endpoint, str):
            return []
        try:
            items = await _on_pool(server.endpoint, fetch)
        except Exception as exc:
            logger.info("MCP upstream %s: not listed (%s)", server.name, exc)
            return []
        return [renamed(server.name, item) for item in items]

    found = await asyncio.gather(*(one(server) for server in servers))
    return [item for items in found for item in items]


async def get_prompt(
    servers: list[Reachable], name: str, arguments: dict[str, str] | None
) -> types.GetPromptResult:
    split = split_listed(name)
    if split is None:
        raise NotUsable(f"No prompt {name!r}: upstream prompts are named SERVER__PROMPT.")
    server = _named(servers, split[0])
    return await _on_pool(server, lambda client: client.get_prompt(split[1], arguments))


def _named(servers: list[Reachable], name: str) -> Endpoint:
    for server in servers:
        if server.name == name:
            if isinstance(server.endpoint, str):
                raise NotUsable(f"The MCP server {name!r} cannot be reached: {server.endpoint}.")
            return server.endpoint
    raise NotUsable(f"No MCP server {name!r} serves you.")


# --- the handlers ------------------------------------------------------------------------

Servers = Callable[[ServerRequestContext[Any, Any]], Awaitable[list[Reachable]]]


def passthrough_handlers(servers: Servers) -> dict[str, Any]:
    """The MCP server's handlers of the upstreams' resources and prompts, read-only;
    `servers` says which servers a request's caller may use."""

    async def on_list_resources(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await list_resources(await servers(ctx)))

    async def on_read_resource(
        ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        with _not_usable_is_invalid():
            return await read_resource(await servers(ctx), str(params.uri))

    async def on_list_prompts(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=await list_prompts(await servers(ctx)))

    async def on_get_prompt(
        ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        with _not_usable_is_invalid():
            return await get_prompt(await servers(ctx), params.name, params.arguments)

    return {
        "on_list_resources": on_list_resources,
        "on_read_resource": on_read_resource,
        "on_list_prompts": on_list_prompts,
        "on_get_prompt": on_get_prompt,
    }


@contextlib.contextmanager
def _not_usable_is_invalid() -> Iterator[None]:
    """A name or URI no usable server answers to is the client's error."""
    try:
        yield
    except NotUsable as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc)) from None
