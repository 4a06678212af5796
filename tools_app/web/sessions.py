"""The session pages: the list, the new-session form, one session's live timeline.

Every session is fetched through `access.py` (an outsider gets 404 on the page, its
fragment and its cancel), every change goes through one service.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from tools_app import access, services
from tools_app.models import AgentSession, AuditEntry
from tools_app.selectors import records, sessions
from tools_app.web.session_drive import drive_help
from tools_app.web.session_forms import SessionForm, configured_roles

STATUSES = AgentSession.Status

Via = AuditEntry.Via


@login_required
@require_safe
def session_list(request: HttpRequest) -> HttpResponse:
    """What GET /api/sessions shows this user, newest first, a keyset page at a time."""
    status = request.GET.get("status", "")
    if status not in STATUSES.values:
        status = ""
    page = sessions.session_list_page(
        access.visible_sessions(request.user, access.BROWSER),
        status=status,
        cursor=request.GET.get("cursor", ""),
    )
    context = {"page": page, "status": status, "statuses": STATUSES.choices}
    return render(request, "tools_app/sessions.html", context)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def session_new(request: HttpRequest) -> HttpResponse:
    form = SessionForm(request.POST if request.method == "POST" else None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            session = services.session_start(
                user=request.user,
                task=data["task"],
                repo=data["repo"],
                model=data["model"],
                policy_name=data["policy"],
                project_name=data["project"],
            )
        except services.Unavailable as exc:  # stored; the sweep queues its clone later
            messages.warning(request, f"The session is stored but not started yet: {exc}")
            return redirect("sessions")
        except services.ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Session {session.pk} started.")
            return redirect("session", session_id=session.pk)
    roles = configured_roles()
    unconfigured = next((hint for hint in roles if not hint.spec), None)
    context = {"form": form, "roles": roles, "unconfigured": unconfigured}
    return render(request, "tools_app/session_new.html", context)


@login_required
@require_safe
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = access.session_for(request.user, session_id)
    context = _live_context(request, session)
    context["drive"] = drive_help(request, session)
    if session.workspace:  # asked once per page, not on every live refresh
        context["tracked_secrets"] = records.session_tracked_secrets_note(session)
    return render(request, "tools_app/session.html", context)


@login_required
@require_safe
def session_timeline(request: HttpRequest, session_id: int) -> HttpResponse:
    """The live part of the session page alone, fetched again when an event arrives."""
    session = access.session_for(request.user, session_id)
    return render(request, "tools_app/_session_live.html", _live_context(request, session))


@login_required
@require_POST
def session_cancel_form(request: HttpRequest, session_id: int) -> HttpResponse:
    session = access.session_to_act_on(request.user, session_id)
    if session.status in AgentSession.FINISHED_STATUSES:
        messages.error(request, f"Session {session.pk} is already {session.status}.")
    else:
        services.session_cancel(session=session, user=request.user, via=Via.BROWSER)
        messages.success(request, f"Session {session.pk} cancelled.")
    return redirect("session", session_id=session.pk)


def _live_context(request: HttpRequest, session: AgentSession) -> dict[str, Any]:
    return {
        "session": session,
        "timeline": sessions.session_timeline(session),
        "children": sessions.session_children(session),
        "may_cancel": (
            access.may_act_on_session(request.user, session)
            and session.status not in AgentSession.FINISHED_STATUSES
        ),
        "timeline_url": reverse("session_timeline", args=[session.pk]),
    }
