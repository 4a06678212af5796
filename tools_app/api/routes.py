"""The REST API under /api/ (django-ninja; OpenAPI at /api/docs).

Views are thin: look up, check access, call one service, answer. Errors are JSON
with a `detail`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Literal

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI, Query, Schema, Status
from ninja.errors import AuthenticationError, HttpError
from ninja.security import HttpBearer, SessionAuth
from pydantic import Field

from tools_app import access, services
from tools_app.api import audit, parsing, skills
from tools_app.api.schemas import (
    DecisionIn,
    ErrorOut,
    EvaluateIn,
    SessionIn,
    SessionOut,
    SessionPage,
    ToolCallIn,
    ToolCallOut,
    ToolCallPage,
    VerdictOut,
)
from tools_app.core import tool_schemas
from tools_app.core.policy.types import SessionCounters
from tools_app.live import waiting
from tools_app.models import AgentSession, AuditEntry, ToolCall
from tools_app.ops import metrics
from tools_app.selectors import records
from tools_app.selectors.pagination import PageQuery, page
from tools_app.services import tokens

MAX_WAIT_SECONDS = 300.0

Via = AuditEntry.Via


class BearerToken(HttpBearer):
    """`Authorization: Bearer TOKEN`; the token's scope limits what the user may do."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = tokens.api_token_verify(token=token)
        if isinstance(found, str):
            raise HttpError(401, f"The bearer token is not valid: {found}.")
        request.agentweb_scope = found.scope  # type: ignore[attr-defined]
        request.user = found.user
        return found.user


api = NinjaAPI(
    title="agentweb",
    version="1",
    description=(
        "Sessions, tool calls, approvals, policies, skills and the audit trail (/api/audit, "
        "/api/audit/export). Notification webhooks POST the JSON schema "
        "agentweb.notification/1, signed X-Agentweb-Signature: t=TIMESTAMP,v1=HMAC-SHA256 of "
        "TIMESTAMP.BODY (README: Reaching reviewers). Slack's interactivity requests (button "
        "clicks, and the deny form's view_submission with its reason) go to "
        "/slack/interactivity/CHANNEL/, outside this API, signed by Slack."
    ),
    auth=[BearerToken(), SessionAuth()],
    urls_namespace="api",
    docs_decorator=login_required,  # the docs are a page: behind login like every page
)
parsing.install(api)  # strict JSON bodies: a bad one is a 400 naming the problem


def scope(request: HttpRequest) -> str:
    return getattr(request, "agentweb_scope", "session")


@api.exception_handler(services.ServiceError)
def service_error(request: HttpRequest, exc: services.ServiceError) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc)}, status=exc.status)


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    """What an outsider gets for any object id: the same answer as for no object."""
    return api.create_response(request, {"detail": str(exc) or "Not found."}, status=404)


@api.exception_handler(PermissionDenied)
def forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc) or "Forbidden."}, status=403)


@api.exception_handler(RequestDataTooBig)
def too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return api.create_response(
        request, {"detail": f"The request body is larger than {limit} bytes."}, status=413
    )


@api.exception_handler(AuthenticationError)
def unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    detail = "Authentication required: send `Authorization: Bearer TOKEN` or log in."
    return api.create_response(request, {"detail": detail}, status=401)


# --- sessions ---------------------------------------------------------------------------


def _session_for(request: HttpRequest, session_id: int) -> AgentSession:
    return access.session_for(request.user, session_id, scope=scope(request))


def _session_to_act_on(request: HttpRequest, session_id: int) -> AgentSession:
    return access.session_to_act_on(request.user, session_id, scope=scope(request))


@api.post("/sessions", response={201: SessionOut, 400: ErrorOut, 503: ErrorOut})
def session_create(request: HttpRequest, body: SessionIn) -> Status[dict[str, Any]]:
    session = services.session_start(
        user=request.user, task=body.task, repo=body.repo, model=body.model,
        policy_name=body.policy, project_name=body.project,
    )  # fmt: skip
    return Status(201, records.session_as_dict(session))


@api.get("/sessions", response={200: SessionPage, 422: ErrorOut})
def session_list(
    request: HttpRequest, pages: Query[PageQuery], status: str | None = None
) -> dict[str, Any]:
    """The sessions this user may see, newest first, a page at a time."""
    sessions = access.visible_sessions(request.user, scope(request)).select_related(
        "policy", "project"
    )
    sessions = sessions.prefetch_related("children")
    if status:
        sessions = sessions.filter(status=status)
    return page(sessions, pages, records.session_as_dict, order="newest")


@api.get("/sessions/{session_id}", response={200: SessionOut, 404: ErrorOut})
def session_detail(request: HttpRequest, session_id: int) -> dict[str, Any]:
    return records.session_as_dict(_session_for(request, session_id))


@api.post(
    "/sessions/{session_id}/cancel",
    response={200: SessionOut, 403: ErrorOut, 404: ErrorOut},
    operation_id="tools_app_api_routes_session_cancel",  # the schema's name, kept
)
def session_cancel_endpoint(request: HttpRequest, session_id: int) -> dict[str, Any]:
    session = services.session_cancel(
        session=_session_to_act_on(request, session_id), user=request.user, via=Via.API
    )
    return records.session_as_dict(session)


@api.get(
    "/sessions/{session_id}/tool-calls",
    response={200: ToolCallPage, 404: ErrorOut, 422: ErrorOut},
)
def session_tool_calls(
    request: HttpRequest, session_id: int, pages: Query[PageQuery]
) -> dict[str, Any]:
    """A session's calls in the order they were received, a page at a time."""
    session = _session_for(request, session_id)
    calls = session.tool_calls.select_related("human__user")
    return page(calls, pages, records.tool_call_as_dict, order="oldest")


@api.get("/sessions/{session_id}/tools", response={200: list[dict[str, Any]], 404: ErrorOut})
def session_tools(
    request: HttpRequest, session_id: int, format: Literal["json", "openai", "anthropic"] = "json"
) -> list[dict[str, Any]]:
    session = _session_for(request, session_id)
    return tool_schemas.in_format(records.session_tool_schemas(session), format)


# --- tool calls -------------------------------------------------------------------------


class WaitQuery(Schema):
    wait: float = Field(
        default=0,
        ge=0,
        le=MAX_WAIT_SECONDS,
        description="Seconds to hold the answer until the call is final.",
    )


def _receive(request: HttpRequest, session_id: int, body: ToolCallIn) -> int:
    """Store the call (and queue its evaluation); its id."""
    session = _session_to_act_on(request, session_id)
    return services.tool_call_receive_external(session=session, tool=body.tool, args=body.args).pk


@api.post(
    "/sessions/{session_id}/tool-calls",
    response={201: ToolCallOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 503: ErrorOut},
)
async def tool_call_create(
    request: HttpRequest, session_id: int, body: ToolCallIn, query: Query[WaitQuery]
) -> Status[dict[str, Any]]:
    if query.wait <= 0:
        call_id = await sync_to_async(_receive)(request, session_id, body)
        return Status(201, await sync_to_async(_current)(call_id))
    started = time.monotonic()
    async with waiting.listening(session_id) as listener:  # before the call exists
        call_id = await sync_to_async(_receive)(request, session_id, body)
        answer = await listener.answer(
            call_id, query.wait, sync_to_async(_current), joined_before_the_call=True
        )
    metrics.wait_answered(answer, time.monotonic() - started)
    return Status(201, answer)


def _visible_call(request: HttpRequest, tool_call_id: int) -> ToolCall:
    return access.tool_call_for(request.user, tool_call_id, scope=scope(request))


@api.get("/tool-calls/{tool_call_id}", response={200: ToolCallOut, 404: ErrorOut})
async def tool_call_detail(
    request: HttpRequest, tool_call_id: int, query: Query[WaitQuery]
) -> dict[str, Any]:
    call = await sync_to_async(_visible_call)(request, tool_call_id)
    started = time.monotonic()
    answer = await _answer_when_final(call.pk, call.session_id, query.wait)
    if query.wait > 0:
        metrics.wait_answered(answer, time.monotonic() - started)
    return answer


async def _answer_when_final(call_id: int, session_id: int, wait: float) -> dict[str, Any]:
    """The call as it is once final, or when `wait` runs out; woken by the call's final
    event (see `waiting`), no thread held while waiting."""
    return await waiting.answer_when_final(
        call_id=call_id, session_id=session_id, wait=wait, read=sync_to_async(_current)
    )


def _current(call_id: int) -> dict[str, Any]:
    """A read: an overdue call shows as expired (the sweep records it), nothing is written."""
    call = ToolCall.objects.select_related("human__user").get(pk=call_id)
    return records.tool_call_as_dict(call)


@api.get("/approvals", response={200: ToolCallPage, 422: ErrorOut})
def approvals(request: HttpRequest, pages: Query[PageQuery]) -> dict[str, Any]:
    """Calls awaiting a decision this user may make, oldest first, a page at a time."""
    calls = access.reviewable_calls(request.user, scope(request), records.approvals_awaiting())
    return page(calls, pages, records.tool_call_as_dict, order="oldest")


@api.post(
    "/tool-calls/{tool_call_id}/decision",
    response={
        200: ToolCallOut,
        403: ErrorOut,
        404: ErrorOut,
        409: ErrorOut,
        422: ErrorOut,
        503: ErrorOut,
    },
)
def tool_call_decision(request: HttpRequest, tool_call_id: int, body: DecisionIn) -> dict[str, Any]:
    call = _visible_call(request, tool_call_id)
    decided = services.tool_call_decide(
        call=call, user=request.user, scope=scope(request), decision=body.decision,
        reason=body.reason, args=body.args, remember=body.remember, rule_args=body.rule_args,
        via=Via.API,
    )  # fmt: skip
    return records.tool_call_as_dict(decided)


# --- policies ---------------------------------------------------------------------------


@api.get("/policies/{name}", response={200: dict[str, Any], 404: ErrorOut})
def policy_detail(request: HttpRequest, name: str) -> dict[str, Any]:
    policy = records.policy_by_name(name)
    if policy is None:
        raise services.NotFound(f"There is no policy named {name!r}.")
    return {**records.policy_as_dict(policy), "version": policy.version}


@api.post("/policies/{name}/evaluate", response={200: VerdictOut, 404: ErrorOut})
def policy_evaluate(request: HttpRequest, name: str, body: EvaluateIn) -> dict[str, Any]:
    """A dry run: what the policy would decide; nothing is stored or run."""
    policy = records.policy_by_name(name)
    if policy is None:
        raise services.NotFound(f"There is no policy named {name!r}.")
    workspace, counters = Path(settings.AGENTWEB_WORKSPACES) / "dry-run", SessionCounters()
    session = _session_for(request, body.session) if body.session is not None else None
    if session is not None:
        workspace, counters = Path(session.workspace), services.session_counters(session)
    verdict = services.policy_evaluate(
        policy=policy, tool=body.tool, args=body.args, workspace=workspace, counters=counters
    )
    note = records.session_tracked_secrets_note(session, policy) if session else ""
    return {**verdict.as_dict(), **({"note": note} if note else {})}


skills.register(api)  # /api/skills: its own module, mounted here
audit.register(api)  # /api/audit too
