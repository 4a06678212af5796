"""Third-party MCP servers at work: how each is reached (its sandbox or its URL, with
the credential agentweb adds), what its listings do to its pinned tools, an admin's
acceptance of a changed definition, and a call bound to the pinned definition and
forwarded once with exactly the approved arguments (docs/mcp.md).
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tools_app import access
from tools_app.core.egress import sandbox as egress_sandbox
from tools_app.core.egress.grant import EgressGrant
from tools_app.core.tools import processes, redaction, sandbox_user
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.netguard import checked_addresses
from tools_app.core.upstreams.definitions import Definition, split_judged
from tools_app.core.upstreams.entries import ENTRY_KEYS, entry_problems
from tools_app.core.upstreams.pinning import reconcile
from tools_app.core.upstreams.pool import Endpoint, Pool, upstream_failures
from tools_app.core.upstreams.sandbox import sandboxed_argv
from tools_app.core.upstreams.tool_spec import Forward, UpstreamCall, result_text
from tools_app.errors import Invalid
from tools_app.models import AgentSession, Project, ToolCall, UpstreamServer, UpstreamTool
from tools_app.services.audit import Action, Via, audit_record

if TYPE_CHECKING:  # the SDK itself is imported where it is used (core/upstreams/pool.py)
    from mcp.client import Client
    from mcp_types import CallToolResult

Pin = UpstreamTool.Pin


@functools.cache
def upstream_pool() -> Pool:
    """This process's warm servers (daphne's for listings, a worker's for calls)."""
    return Pool(
        idle_seconds=float(settings.AGENTWEB_MCP_UPSTREAM_IDLE_SECONDS),
        start_seconds=float(settings.AGENTWEB_MCP_UPSTREAM_START_SECONDS),
    )


def call_seconds() -> float:
    return float(settings.AGENTWEB_MCP_UPSTREAM_CALL_SECONDS)


# --- reaching a server ---------------------------------------------------------------------


def upstream_endpoint(server: UpstreamServer) -> Endpoint | str:
    """How to reach `server`, or why it cannot be reached (a URL the SSRF guard refuses,
    a stdio entry without a command)."""
    secret = _credential(server)
    if server.kind == UpstreamServer.Kind.HTTP:
        checked = checked_addresses(server.url, settings.AGENTWEB_MCP_UPSTREAM_ALLOW_HOSTS)
        if isinstance(checked, str):
            return f"its URL is refused: {checked}"
        addresses = tuple(str(address) for address in checked)
        return Endpoint(
            name=server.name, url=server.url, addresses=addresses, headers=tuple(secret.items())
        )
    if not server.command:
        return "it has no command"
    scratch = _scratch(server.name)
    grant = EgressGrant(hosts=tuple(server.network_hosts)) if server.network_hosts else None
    egress_dir = _egress_dir(server.name) if grant else None
    env = processes.scrubbed_env(processes.SANDBOX_HOME)
    env |= {str(k): str(v) for k, v in (server.environment or {}).items()} | secret
    argv = sandboxed_argv(
        [str(part) for part in server.command],
        scratch=scratch,
        readonly=[str(p) for p in server.readonly_paths or ()],
        writable=[str(p) for p in server.writable_paths or ()],
        egress=grant,
        egress_dir=egress_dir,
    )
    return Endpoint(
        name=server.name,
        argv=tuple(argv),
        env=tuple(sorted(egress_sandbox.environment(grant, env).items())),
        cwd=str(scratch),
        stderr=str(scratch.parent / f"{server.name}.stderr"),
        egress=grant,
        egress_dir=str(egress_dir or ""),
    )


def _credential(server: UpstreamServer) -> dict[str, str]:
    if server.credential_name and server.credential_value:
        return {server.credential_name: server.credential_value}
    return {}


def _scratch(name: str) -> Path:
    """The server's own folder, its working directory in the sandbox."""
    scratch = Path(settings.AGENTWEB_VAR) / "upstreams" / name
    scratch.mkdir(parents=True, exist_ok=True)
    if sandbox_user.worker_is_root():  # the server runs as the sandbox uid: its folder is its own
        os.chown(scratch, *sandbox_user.sandbox_ids())
    return scratch


def _egress_dir(name: str) -> Path:
    """Where the server's egress proxy puts its socket, outside the server's view: a
    folder of this process's own, since each process on the host that talks to the
    server (daphne for listings, each worker for calls) runs its own copy of it."""
    servers = Path(settings.AGENTWEB_VAR) / "upstreams" / f"{name}.egress"
    servers.mkdir(mode=0o755, parents=True, exist_ok=True)
    return servers / str(os.getpid())  # made and removed with the proxy (`pool._client`)


def hide_credential(server: UpstreamServer, text: str) -> str:
    """`text` without the server's credential: every word of a server an agent reads
    (a result, an error, a tool's description) passes here."""
    secret = server.credential_value
    return redaction.redact(text, [secret]) if secret else text


async def listed_tools(client: Client) -> list[dict[str, Any]]:
    """Every tool a server lists, page by page, as plain JSON."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools += [
            tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in page.tools
        ]
        cursor = page.next_cursor
        if not cursor:
            return tools


# --- listings and pins ----------------------------------------------------------------------


@transaction.atomic
def upstream_listing_record(
    *,
    server_id: int,
    listed: list[dict[str, Any]] | None,
    error: str = "",
    started_at: float | None = None,
) -> None:
    """A listing's outcome: the server's error (shown on the admin page), or its tools
    reconciled with their pins (`core/upstreams/pinning.py`) and when it started."""
    server = UpstreamServer.objects.select_for_update().filter(pk=server_id).first()
    if server is None:
        return
    now = timezone.now()
    if listed is None:
        server.last_error = hide_credential(server, error)[:2000]
        server.save(update_fields=["last_error"])
        return
    pins = {row.name: row for row in server.tools.all()}
    definitions = [Definition.from_dict(_redacted_definition(server, item)) for item in listed]
    accepted = {name: row.accepted_fingerprint for name, row in pins.items()}
    for update in reconcile(accepted, definitions, first=server.last_listed_at is None):
        row = pins.get(update.name) or UpstreamTool(server=server, name=update.name)
        if update.delete:
            if row.pk:
                row.delete()
            continue
        row.pin, row.flags = update.pin, update.flags
        if update.listed is not None:
            row.listed, row.listed_fingerprint = update.listed, update.fingerprint
        if update.accept:
            row.accepted, row.accepted_fingerprint, row.accepted_at = (
                update.listed,
                update.fingerprint,
                now,
            )
        row.save()
    server.last_error, server.last_listed_at = "", now
    if started_at is not None:
        server.last_started_at = datetime.fromtimestamp(started_at, tz=UTC)
    server.save(update_fields=["last_error", "last_listed_at", "last_started_at"])


def _redacted_definition(server: UpstreamServer, item: Mapping[str, Any]) -> dict[str, Any]:
    """A listed tool with the credential taken out of its text (a server that echoes it
    in a description shows it to nobody)."""
    if not server.credential_value:
        return dict(item)
    text = json.dumps(item, ensure_ascii=False)
    secret = json.dumps(server.credential_value, ensure_ascii=False)[1:-1]
    return dict(json.loads(redaction.redact(text, [secret])))


@transaction.atomic
def upstream_tool_accept(*, tool: UpstreamTool, user: Any, via: str) -> None:
    """An admin accepts what the server lists now: the tool is available again with that
    definition (a vanished tool is forgotten), recorded in the audit trail."""
    row = UpstreamTool.objects.select_for_update().filter(pk=tool.pk).first()
    if row is None:
        return
    details = {"from": row.accepted_fingerprint, "to": row.listed_fingerprint, "flags": row.flags}
    if row.pin == Pin.VANISHED:
        row.delete()
    else:
        row.accepted, row.accepted_fingerprint = row.listed, row.listed_fingerprint
        row.pin, row.accepted_by, row.accepted_at = Pin.ACCEPTED, user, timezone.now()
        row.save()
    audit_record(
        action=Action.UPSTREAM_ACCEPT, via=via, actor=user, object_type="upstream_tool",
        object_id=tool.pk, object_repr=str(tool), tool=f"mcp.{tool.server.name}.{tool.name}",
        project=tool.server.project.name if tool.server.project else "", details=details,
    )  # fmt: skip


# --- a call -----------------------------------------------------------------------------


def upstream_call_bind(*, session: AgentSession, tool: str) -> UpstreamCall | str:
    """The pinned definition a call of `mcp.SERVER.TOOL` is judged with, or why it may
    not be called."""
    server_name, tool_name = split_judged(tool)
    server = _usable_server(session, server_name)
    if server is None:
        return f"Unknown tool {tool!r}: no MCP server {server_name!r} serves this session."
    row = server.tools.filter(name=tool_name).first()
    if row is None:
        return f"Unknown tool {tool!r}: the MCP server {server_name!r} lists no {tool_name!r}."
    if row.pin != Pin.ACCEPTED or row.accepted is None:
        return held_message(server_name, row)
    definition = Definition.from_dict(row.accepted)
    return UpstreamCall(server_name, definition, row.accepted_fingerprint)


HELD_BECAUSE: dict[str, str] = {
    Pin.NEW: "is new since an admin last reviewed this server's tools",
    Pin.CHANGED: "changed its definition since an admin accepted it",
    Pin.VANISHED: "is no longer listed by its server",
}


def held_message(server: str, row: UpstreamTool) -> str:
    what = HELD_BECAUSE.get(str(row.pin), "is held")
    return (
        f"{server}__{row.name} cannot be called: it {what}, and awaits an admin's review "
        "on agentweb's admin page (MCP upstream tools). Nothing was sent to the server."
    )


def _usable_server(session: AgentSession, name: str) -> UpstreamServer | None:
    return access.session_upstreams(session).filter(name=name).first()


def upstream_call_captured(call: ToolCall) -> UpstreamCall | None:
    """The definition captured when the call was judged (kept in its preview)."""
    preview = call.preview if isinstance(call.preview, Mapping) else {}
    definition = preview.get("definition")
    return UpstreamCall.from_dict(definition) if isinstance(definition, Mapping) else None


def upstream_call_withdrawn(*, call: ToolCall, captured: UpstreamCall) -> str | None:
    """Why an approved call may no longer be forwarded (its server was disabled or
    removed, or the pin it was judged with is no longer the accepted one), or None."""
    server = _usable_server(call.session, captured.server)
    if server is None:
        return f"Not run: the MCP server {captured.server!r} was disabled or removed."
    row = server.tools.filter(name=captured.definition.name).first()
    if row is None or row.accepted_fingerprint != captured.fingerprint:
        return (
            f"Not run: the definition of {captured.server}__{captured.definition.name} "
            "an admin accepted changed after this call was judged."
        )
    if row.pin != Pin.ACCEPTED:
        return "Not run: " + held_message(captured.server, row)
    return None


def upstream_forwarder(*, captured: UpstreamCall) -> Forward:
    """Sends the approved arguments once, after checking that the server still lists the
    tool exactly as it was approved (else nothing is sent and the change is held)."""
    server = UpstreamServer.objects.get(name=captured.server)

    def forward(args: dict[str, Any]) -> str:
        endpoint = upstream_endpoint(server)
        if isinstance(endpoint, str):
            raise ToolError(f"The MCP server {server.name!r} cannot be reached: {endpoint}.")
        _check_still_listed(server, captured, endpoint)
        try:
            call = _calling(captured.definition.name, args)
            result = upstream_pool().run(endpoint, call, timeout=call_seconds())
        except upstream_failures() as exc:
            upstream_listing_record(server_id=server.pk, listed=None, error=str(exc))
            said = (
                f"The call was sent once to the MCP server {server.name!r}, which failed "
                f"while answering ({exc}); whether it took effect is unknown."
            )
            raise ToolError(hide_credential(server, said)) from None
        structured = result.structured_content
        text, failed = result_text(result.content, structured, is_error=result.is_error)
        text = hide_credential(server, text)
        if failed:
            raise ToolError(text or "The MCP server answered with an error and no text.")
        return text

    return forward


def _check_still_listed(server: UpstreamServer, captured: UpstreamCall, endpoint: Endpoint) -> None:
    """The server answers (started again if it had crashed) and lists the tool exactly
    as the call was judged with; else a ToolError, and nothing is sent."""
    try:
        listed = upstream_pool().run(endpoint, listed_tools, timeout=call_seconds(), retry=True)
    except upstream_failures() as exc:
        upstream_listing_record(server_id=server.pk, listed=None, error=str(exc))
        raise ToolError(hide_credential(server, f"Not run: {exc}.")) from None
    if not _still_listed(server, captured, listed):
        upstream_listing_record(server_id=server.pk, listed=listed)
        raise ToolError(
            f"Not run: {server.name}__{captured.definition.name} changed its definition "
            "since this call was approved; it awaits an admin's review. Nothing was sent."
        )


def _still_listed(
    server: UpstreamServer, captured: UpstreamCall, listed: list[dict[str, Any]]
) -> bool:
    live = next((t for t in listed if t.get("name") == captured.definition.name), None)
    if live is None:
        return False
    shown = Definition.from_dict(_redacted_definition(server, live))
    return shown.fingerprint() == captured.fingerprint


def _calling(name: str, args: dict[str, Any]) -> Callable[[Client], Awaitable[CallToolResult]]:
    async def call(client: Client) -> CallToolResult:
        return await client.call_tool(name, args)

    return call


def upstreams_close() -> None:
    """Stop this process's servers (tests; a process's end)."""
    upstream_pool().close()


# --- entries: import, export, the admin's saves ------------------------------------------


def upstream_as_dict(server: UpstreamServer) -> dict[str, Any]:
    """An entry as a file holds it (what `export_upstreams` prints): never the
    credential's value, which stays write-only."""
    return {
        "name": server.name,
        "kind": server.kind,
        "command": list(server.command or []),
        "url": server.url,
        "environment": dict(server.environment or {}),
        "readonly_paths": list(server.readonly_paths or []),
        "writable_paths": list(server.writable_paths or []),
        "network_hosts": list(server.network_hosts or []),
        "credential_name": server.credential_name,
        "project": server.project.name if server.project else "",
        "enabled": server.enabled,
    }


@transaction.atomic
def upstreams_import(*, data: object, user: Any = None, via: str = Via.CLI) -> list[UpstreamServer]:
    """Create or replace each entry of an upstreams file (`{"upstreams": [...]}`); a bad
    file is refused whole, naming each problem. An entry without `credential_value`
    keeps the credential the server has."""
    entries = data.get("upstreams") if isinstance(data, Mapping) else None
    if not isinstance(entries, list):
        raise Invalid('An upstreams file holds {"upstreams": [ENTRY, ...]}.')
    problems = [
        f"upstreams[{index}] {why}"
        for index, entry in enumerate(entries)
        for why in [*entry_problems(entry), *_project_problems(entry)]
    ]
    if problems:
        raise Invalid("The upstreams file is not valid: " + "; ".join(problems))
    return [_upstream_save(entry, user=user, via=via) for entry in entries]


def _project_problems(entry: object) -> list[str]:
    name = entry.get("project", "") if isinstance(entry, Mapping) else ""
    if not name:
        return []
    if not isinstance(name, str) or not Project.objects.filter(name=name).exists():
        return [f"project: there is no project {name!r}"]
    return []


def _upstream_save(entry: Mapping[str, Any], *, user: Any, via: str) -> UpstreamServer:
    fields = {key: entry[key] for key in ENTRY_KEYS if key in entry and key != "name"}
    project = fields.pop("project", "")
    fields["project"] = Project.objects.get(name=project) if project else None
    server, created = UpstreamServer.objects.update_or_create(name=entry["name"], defaults=fields)
    upstream_changed(server=server, user=user, via=via, created=created)
    return server


def upstream_changed(*, server: UpstreamServer, user: Any, via: str, created: bool) -> None:
    """The audit entry of a server registered or changed (imported, or saved in the
    admin), with its entry as it now is (never the credential)."""
    audit_record(
        action=Action.UPSTREAM_CHANGE, via=via, actor=user, object_type="upstream",
        object_id=server.pk, object_repr=f"MCP upstream {server.name}",
        project=server.project.name if server.project else "",
        details={"created": created, **upstream_as_dict(server)},
    )  # fmt: skip
