"""Every "may this user see / do this?" in one place, one condition a line.

`scope` is how the user came in: "session" (browser), or an API token's scope
("agent" or "review"). Agent tokens start, follow and cancel their user's own sessions
and send tool calls; they never decide and never see other people's sessions.

The `*_for` helpers fetch an object and check it in one step, as healthchecks does:
an object the user may not see does not exist for them (Http404, never 403), so ids
reveal nothing. 403 (PermissionDenied) is only for a visible object that the user may
not act on. Pages, the API and the websockets all fetch through these.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404

from tools_app.models import (
    AgentSession,
    ApiToken,
    AuditEntry,
    Project,
    PullRequest,
    ToolCall,
    UpstreamServer,
)
from tools_app.tables.projects import REVIEWERS_GROUP as REVIEWERS_GROUP

FULL_SCOPES = frozenset({"session", "review"})
BROWSER = "session"


# --- projects: who sees and decides whose sessions -----------------------------------------


def reviews_everything(user: Any) -> bool:
    """Superusers, and users given `decide_toolcall` itself, review every project."""
    if not _active(user):
        return False
    return bool(user.is_superuser or user.has_perm("tools_app.decide_toolcall"))


def reviewed_projects(user: Any) -> QuerySet[Project]:
    """The projects whose calls this person decides (through their groups)."""
    if reviews_everything(user):
        return Project.objects.all()
    if not _active(user):
        return Project.objects.none()
    return Project.objects.filter(reviewers__in=user.groups.all()).distinct()


def seen_projects(user: Any) -> QuerySet[Project]:
    """The projects whose sessions this person sees: as a member or a reviewer."""
    if reviews_everything(user):
        return Project.objects.all()
    if not _active(user):
        return Project.objects.none()
    groups = user.groups.all()
    return Project.objects.filter(Q(reviewers__in=groups) | Q(members__in=groups)).distinct()


def may_use_project(user: Any, project: Project) -> bool:
    """Start sessions in it (or take a token for it): its members and reviewers."""
    return seen_projects(user).filter(pk=project.pk).exists()


def may_sign_in_with_password(user: Any) -> bool:
    """Everyone while AGENTWEB_PASSWORD_LOGIN is on; off, superusers only (the
    break-glass when the identity provider is down)."""
    return bool(settings.AGENTWEB_PASSWORD_LOGIN or user.is_superuser)


def is_reviewer(user: Any) -> bool:
    """Reviews at least one project."""
    return reviewed_projects(user).exists()


def may_review(user: Any, scope: str) -> bool:
    """Decides some project's calls: from the browser or with a review token."""
    return scope in FULL_SCOPES and is_reviewer(user)


def may_review_project(user: Any, scope: str, project_id: int | None) -> bool:
    if scope not in FULL_SCOPES or project_id is None:
        return False
    return reviewed_projects(user).filter(pk=project_id).exists()


def reviewable_calls(user: Any, scope: str, calls: QuerySet[ToolCall]) -> QuerySet[ToolCall]:
    """The calls of `calls` this person may decide: those of the projects they review."""
    if scope not in FULL_SCOPES or not _active(user):
        return calls.none()
    if reviews_everything(user):
        return calls
    return calls.filter(session__project__in=reviewed_projects(user))


def may_see_session(user: Any, session: AgentSession, scope: str = BROWSER) -> bool:
    """A creator sees their own sessions; a project's members and reviewers see its
    sessions from the browser or with a review token; an agent token only its own."""
    if session.creator_id == user.pk:
        return True
    if scope not in FULL_SCOPES or session.project_id is None:
        return False
    return seen_projects(user).filter(pk=session.project_id).exists()


def visible_sessions(user: Any, scope: str = BROWSER) -> QuerySet[AgentSession]:
    sessions = AgentSession.objects.all()
    if scope in FULL_SCOPES and reviews_everything(user):
        return sessions
    if scope not in FULL_SCOPES:
        return sessions.filter(creator=user)
    return sessions.filter(Q(creator=user) | Q(project__in=seen_projects(user)))


def may_act_on_session(user: Any, session: AgentSession) -> bool:
    """Send tool calls to a session, or cancel it."""
    return bool(session.creator_id == user.pk or user.is_superuser)


def may_see_pull_request(user: Any, pull: PullRequest, scope: str = BROWSER) -> bool:
    """As its session; a pull request whose session is gone is for reviewers only."""
    if pull.session is None:
        return may_review(user, scope)
    return may_see_session(user, pull.session, scope)


def may_decide(user: Any, scope: str, call: ToolCall, *, approve: bool) -> bool:
    """Reviewers of the call's project decide; under `require_distinct_reviewer` a
    creator may only deny. A call with a quorum (more than one approval, or a named
    group) is approved only by members of its group, never by its session's creator;
    any of the project's reviewers may deny."""
    if not may_review_project(user, scope, call.session.project_id):
        return False
    if not approve:
        return True
    own_session = call.session.creator_id == user.pk
    if has_quorum(call):
        return not own_session and in_group(user, call.approvers)
    return not (call.session.policy.require_distinct_reviewer and own_session)


def has_quorum(call: ToolCall) -> bool:
    return call.approvals_needed > 1 or bool(call.approvers)


def in_group(user: Any, group: str) -> bool:
    """In the named group (an empty name: any reviewer is)."""
    return not group or user.groups.filter(name=group).exists()


def is_policy_admin(user: Any) -> bool:
    """May change policies: a superuser, or a user given the `change_policy` permission.
    Only they may remember a rule wider than a protected or risky call they saw."""
    if not user.is_active:
        return False
    return bool(user.is_superuser or user.has_perm("tools_app.change_policy"))


def may_see_skills(user: Any) -> bool:
    """Skills are shared configuration: any logged-in user (any token) may read them."""
    return _active(user)


def may_edit_skills(user: Any, scope: str) -> bool:
    """A skill defines what commands and requests its tools make: staff, or a user given
    the `change_skill` permission, from the browser or with a review token."""
    if scope not in FULL_SCOPES or not _active(user):
        return False
    return bool(user.is_staff or user.is_superuser or user.has_perm("tools_app.change_skill"))


def check_edit_skills(user: Any, scope: str) -> None:
    if not may_edit_skills(user, scope):
        raise PermissionDenied(
            "Only staff (or users with the change_skill permission) may change skills, "
            "from the browser or with a review token."
        )


def may_see_audit(user: Any, scope: str) -> bool:
    """The audit trail names everyone's actions: staff, or a user given the
    `view_auditentry` permission, from the browser or with a review token."""
    if scope not in FULL_SCOPES or not _active(user):
        return False
    return bool(user.is_staff or user.is_superuser or user.has_perm("tools_app.view_auditentry"))


def visible_audit(user: Any, entries: QuerySet[AuditEntry]) -> QuerySet[AuditEntry]:
    """Staff and superusers (admins) read every entry; a person given `view_auditentry`
    reads the entries of the projects they see, none about no project (a policy, a
    skill, a token)."""
    if user.is_staff or user.is_superuser:
        return entries
    return entries.filter(project_name__in=seen_projects(user).values("name"))


def check_see_audit(user: Any, scope: str) -> None:
    if not may_see_audit(user, scope):
        raise PermissionDenied(
            "Only staff (or users with the view_auditentry permission) may read the audit "
            "trail, from the browser or with a review token."
        )


def may_take_token_scope(user: Any, scope: str) -> bool:
    """A person makes their own tokens: `agent` for anyone, `review` (all their rights,
    deciding included) only for a reviewer."""
    if scope == ApiToken.Scope.REVIEW:
        return is_reviewer(user)
    return scope == ApiToken.Scope.AGENT and _active(user)


def is_token_admin(user: Any) -> bool:
    """Staff and superusers see everyone's tokens and may revoke any of them."""
    return _active(user) and bool(user.is_staff or user.is_superuser)


def visible_api_tokens(user: Any) -> QuerySet[ApiToken]:
    tokens = ApiToken.objects.select_related("user")
    return tokens if is_token_admin(user) else tokens.filter(user__pk=user.pk)


def usable_upstreams(user: Any, session: AgentSession | None) -> QuerySet[UpstreamServer]:
    """The MCP upstream servers a caller's agent may use: the enabled ones for every
    project and, in a session, those of its project; without one, those of the projects
    the person sees (a listing: every call still acts in a session)."""
    if not _active(user):
        return UpstreamServer.objects.none()
    if session is not None:
        return session_upstreams(session)
    servers = UpstreamServer.objects.filter(enabled=True)
    return servers.filter(Q(project__isnull=True) | Q(project__in=seen_projects(user)))


def session_upstreams(session: AgentSession) -> QuerySet[UpstreamServer]:
    """The MCP upstream servers a session's calls may reach: the enabled ones for every
    project and those of its own project."""
    servers = UpstreamServer.objects.filter(enabled=True)
    return servers.filter(Q(project__isnull=True) | Q(project_id=session.project_id))


# --- fetch and check: 404 to outsiders ---------------------------------------------------


def session_for(user: Any, session_id: int, *, scope: str = BROWSER) -> AgentSession:
    session = AgentSession.objects.select_related("policy", "project").filter(pk=session_id).first()
    if session is None or not _active(user) or not may_see_session(user, session, scope):
        raise Http404(f"There is no session {session_id}.")
    return session


def session_to_act_on(user: Any, session_id: int, *, scope: str = BROWSER) -> AgentSession:
    session = session_for(user, session_id, scope=scope)
    if not may_act_on_session(user, session):
        raise PermissionDenied("Only the session's creator may send calls to it or cancel it.")
    return session


def tool_call_for(user: Any, tool_call_id: int, *, scope: str = BROWSER) -> ToolCall:
    calls = ToolCall.objects.select_related("session__policy", "human__user")
    call = calls.filter(pk=tool_call_id).first()
    if call is None or not _active(user) or not may_see_session(user, call.session, scope):
        raise Http404(f"There is no tool call {tool_call_id}.")
    return call


def pull_request_for(user: Any, pull_id: int, *, scope: str = BROWSER) -> PullRequest:
    pull = PullRequest.objects.select_related("session").filter(pk=pull_id).first()
    if pull is None or not _active(user) or not may_see_pull_request(user, pull, scope):
        raise Http404(f"There is no pull request {pull_id}.")
    return pull


def api_token_for(user: Any, token_id: int) -> ApiToken:
    token = visible_api_tokens(user).filter(pk=token_id).first()
    if token is None or not _active(user):
        raise Http404(f"There is no token {token_id}.")
    return token


def _active(user: Any) -> bool:
    """Anonymous and deactivated users see nothing, whatever they once created."""
    return bool(user.is_authenticated and user.is_active)
