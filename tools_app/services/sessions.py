"""Sessions: start (a fresh clone on a worker host), status, counters, cancel."""

from __future__ import annotations

import logging
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from tools_app.errors import ServiceError, Unavailable
from tools_app.live import events
from tools_app.models import AgentSession, Policy, ToolCall
from tools_app.selectors import records
from tools_app.services import workspaces
from tools_app.services.audit import Action, Via, audit_record
from tools_app.services.lifecycle import (
    PERSON,
    WORKER,
    session_move,
    session_wake_agent,
    tool_call_move,
)
from tools_app.services.projects import project_choose, project_policy
from tools_app.services.providers import model_spec_resolve
from tools_app.services.queueing import (
    EVALUATE_TOOL_CALL,
    agent_turn_enqueue,
    session_prepare_enqueue,
    tool_call_enqueue,
)
from tools_app.services.skill_calls import skills_activate

logger = logging.getLogger(__name__)

SessionStatus = AgentSession.Status
LIVE_STATUSES = (SessionStatus.RUNNING, SessionStatus.WAITING)
OPEN_CALL_STATUSES = (
    ToolCall.Status.PENDING,
    ToolCall.Status.AWAITING_APPROVAL,
    ToolCall.Status.APPROVED,
    ToolCall.Status.RUNNING,
)


def session_start(
    *, user: Any, task: str, repo: str, model: str = "", policy_name: str = "",
    project_name: str = "",
) -> AgentSession:  # fmt: skip
    """Create a session and queue its clone on a worker; bad input changes nothing. Its
    project is the one named, else the one its repository belongs to; its policy the
    one named, else its project's, else `default`."""
    if not task.strip():
        raise ServiceError("`task` must not be empty.")
    try:
        repo = workspaces.check_repo(repo, settings.AGENTWEB_REPO_ROOTS)
    except workspaces.WorkspaceError as exc:
        raise ServiceError(str(exc)) from exc
    project = project_choose(user=user, repo=repo, name=project_name)
    policy = project_policy(project, named=policy_name)
    if model.strip():
        model = model_spec_resolve(model)
    with transaction.atomic():
        session = AgentSession.objects.create(
            task=task,
            repo=repo,
            workspace="",
            policy=policy,
            project=project,
            model=model,
            creator=user,
            max_iterations=settings.AGENTWEB_MAX_ITERATIONS,
            token_budget=settings.AGENTWEB_TOKEN_BUDGET,
            active_skills=skills_activate(task=task),
        )
        workspace = Path(settings.AGENTWEB_WORKSPACES) / f"session-{session.pk}"
        AgentSession.objects.filter(pk=session.pk).update(workspace=str(workspace))
        session.workspace = str(workspace)
        created = _payload(session) | {"skills": session.active_skills}
        events.event_append(session_id=session.pk, type="session.created", data=created)
        session_prepare_enqueue(session_id=session.pk)
    return session


def session_requeue_unprepared() -> int:
    """Sessions whose clone task was lost (Redis down) or whose cloning worker died."""
    now = timezone.now()
    stalled = AgentSession.objects.filter(
        status=SessionStatus.QUEUED,
        worker_queue__gt="",
        updated_at__lte=now - timedelta(seconds=workspaces.CLONE_TIMEOUT + 60),
    )
    stalled.update(worker_queue="", updated_at=now)
    # `updated_at` is when its clone task was last sent: resend at most every 30 s.
    lost = AgentSession.objects.filter(
        status=SessionStatus.QUEUED, worker_queue="", updated_at__lte=now - timedelta(seconds=30)
    )
    sent = 0
    try:
        for session_id in lost.values_list("pk", flat=True):
            session_prepare_enqueue(session_id=session_id)
            AgentSession.objects.filter(pk=session_id).update(updated_at=now)
            sent += 1
    except Unavailable:
        logger.warning("broker unavailable; unprepared sessions are retried on the next sweep")
    return sent


def session_prepare(*, session_id: int, queue: str) -> AgentSession:
    """On the worker host that picked it up: clone the repository, then take its calls.

    The session is claimed for this host first (one conditional update), so a duplicated
    message never clones twice; what a crashed attempt left is cleared before cloning.
    """
    claimed = AgentSession.objects.filter(
        pk=session_id, status=SessionStatus.QUEUED, worker_queue=""
    ).update(worker_queue=queue, updated_at=timezone.now())
    session = AgentSession.objects.get(pk=session_id)
    if not claimed:
        return session
    workspace = Path(session.workspace)
    shutil.rmtree(workspace, ignore_errors=True)
    try:
        workspaces.clone(session.repo, workspace)
    except workspaces.WorkspaceError as exc:
        return session_finish(session_id=session.pk, status=SessionStatus.FAILED, summary=str(exc))
    found = records.tracked_secrets(session.policy, workspace)  # here: the clone is on this host
    AgentSession.objects.filter(pk=session.pk).update(tracked_secrets=found)
    session_move(
        session.pk, "start", by=WORKER, event={**_payload(session), "status": SessionStatus.RUNNING}
    )
    session.refresh_from_db()
    for call_id in session.tool_calls.filter(status=ToolCall.Status.PENDING).values_list(
        "pk", flat=True
    ):
        tool_call_enqueue(tool_call_id=call_id, task=EVALUATE_TOOL_CALL, session=session)
    if session.model:
        agent_turn_enqueue(session=session)
    return session


def session_open_for_workspace(*, workspace: Path, policy: Policy) -> AgentSession:
    """A session for one command-line call on an existing directory (no clone)."""
    return AgentSession.objects.create(
        task="command line call",
        repo=str(workspace),
        project=project_choose(user=None, repo=str(workspace)),
        workspace=str(workspace),
        kind=AgentSession.Kind.CLI,
        status=SessionStatus.RUNNING,
        policy=policy,
    )


def session_close_cli(*, session: AgentSession) -> None:
    """A command-line call's session is done once its one call was handled."""
    session_move(
        session.pk,
        "close_cli",
        by=PERSON,
        where=Q(kind=AgentSession.Kind.CLI),
        finished_at=timezone.now(),
    )


def session_count_lines(*, session_id: int, lines: int, approved_by_human: bool) -> None:
    """Add a write's changed lines; a person's approval restarts the since-approval count."""
    since = 0 if approved_by_human else F("changed_since_approval") + lines
    AgentSession.objects.filter(pk=session_id).update(
        total_changed_lines=F("total_changed_lines") + lines, changed_since_approval=since
    )


def session_finish(
    *, session_id: int, status: str, summary: str = "", files_changed: list[str] | None = None,
    by: str = WORKER,
) -> AgentSession:  # fmt: skip
    """End a session once; a session already done, failed or cancelled stays as it is.

    A sub-agent's end wakes its parent, whose spawn_subagent call receives the report."""
    files = files_changed or []
    with transaction.atomic():
        finished = session_move(
            session_id, "finish", by=by, to=status,
            event={"summary": summary, "files_changed": files},
            summary=summary, files_changed=files, turn_runner="", finished_at=timezone.now(),
        )  # fmt: skip
        session = AgentSession.objects.get(pk=session_id)
        if finished and session.parent_id:
            session_wake_agent(session_id=session.parent_id, force=True)
    return session


def session_cancel(
    *, session: AgentSession, user: Any = None, via: str = Via.SYSTEM
) -> AgentSession:
    """Cancel a session: its open calls become `cancelled`. `user` cancelled it from
    `via` (recorded when it was still open; its sub-agents go with it, unrecorded).

    A running command is killed by the worker that runs it, which asks about once a
    second whether its call was cancelled; that works whatever else the host is doing.
    """
    note = "Cancelled with the session."
    with transaction.atomic():
        for child in session.children.exclude(status__in=AgentSession.FINISHED_STATUSES):
            session_cancel(session=child)
        calls = list(ToolCall.objects.filter(session=session, status__in=OPEN_CALL_STATUSES))
        cancelled = [call.pk for call in calls]
        for call in calls:
            tool_call_move(
                call,
                "cancel",
                by=PERSON,
                source=call.status,
                finished_at=timezone.now(),
                result=note,
            )
        was_open = session.status not in AgentSession.FINISHED_STATUSES
        finished = session_finish(
            session_id=session.pk, status=SessionStatus.CANCELLED, summary="cancelled", by=PERSON
        )
        if was_open and user is not None and finished.status == SessionStatus.CANCELLED:
            _audit_cancel(finished, user=user, via=via, calls=cancelled)
        return finished


def _audit_cancel(session: AgentSession, *, user: Any, via: str, calls: list[int]) -> None:
    audit_record(
        action=Action.SESSION_CANCEL, via=via, actor=user, object_type="session",
        object_id=session.pk, object_repr=str(session), session_id=session.pk,
        policy=session.policy.name, project=session.project.name,
        details={"cancelled_calls": calls},
    )  # fmt: skip


def _payload(session: AgentSession) -> dict[str, Any]:
    return {"status": session.status, "task": session.task, "repo": session.repo}
