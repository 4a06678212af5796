"""Every "may this user see / do this?" in one place, one condition a line.

`scope` is how the user came in: "session" (browser), or an API token's scope
("agent" or "review"). Agent tokens start, follow and cancel sessions and send
tool calls; they never decide.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from tools_app.models import AgentSession, ToolCall

REVIEWERS_GROUP = "reviewers"
FULL_SCOPES = frozenset({"session", "review"})


def is_reviewer(user: Any) -> bool:
    if not user.is_active:
        return False
    if user.is_superuser or user.has_perm("tools_app.decide_toolcall"):
        return True
    return bool(user.groups.filter(name=REVIEWERS_GROUP).exists())


def may_see_session(user: Any, session: AgentSession) -> bool:
    return bool(session.creator_id == user.pk or is_reviewer(user))


def visible_sessions(user: Any) -> QuerySet[AgentSession]:
    sessions = AgentSession.objects.all()
    return sessions if is_reviewer(user) else sessions.filter(creator=user)


def may_act_on_session(user: Any, session: AgentSession) -> bool:
    """Send tool calls to a session, or cancel it."""
    return bool(session.creator_id == user.pk or user.is_superuser)


def may_review(user: Any, scope: str) -> bool:
    return scope in FULL_SCOPES and is_reviewer(user)


def may_decide(user: Any, scope: str, call: ToolCall, *, approve: bool) -> bool:
    """Reviewers decide; under `require_distinct_reviewer` a creator may only deny."""
    if not may_review(user, scope):
        return False
    own_session = call.session.creator_id == user.pk
    distinct = call.session.policy.require_distinct_reviewer
    return not (approve and distinct and own_session)
