"""Sub-agents: a spawn_subagent call becomes a child session, and its end the call's result.

The child shares its parent's workspace, policy and creator, so every approval and the
four-eyes rule apply to it exactly as to its parent. The parent's call stays `running`
(held by no worker) until the child ends; then the parent's turn task finishes the call
with the child's report. The tool reaches here through `ToolContext.start_subagent`."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction

from tools_app.core import engine
from tools_app.core.tools.errors import ToolError
from tools_app.errors import ServiceError
from tools_app.live import events
from tools_app.models import AgentSession, ToolCall
from tools_app.services.providers import model_spec_resolve
from tools_app.services.queueing import agent_turn_enqueue

SUBAGENT_RUNNER = "subagent:"


def subagent_starter(*, call: ToolCall) -> Callable[[], None]:
    """What spawn_subagent calls to delegate (`ToolContext.start_subagent`)."""
    return lambda: subagent_start(call=call)


def subagent_start(*, call: ToolCall) -> None:
    """Start the child session for a running spawn_subagent call; a ToolError, which the
    agent reads, when it cannot."""
    parent = call.session
    if not parent.model:
        raise ToolError(
            "spawn_subagent needs the agent runtime: this session has no model, so there "
            "is no one to delegate to. Do the subtask yourself."
        )
    depth_cap = settings.AGENTWEB_MAX_SUBAGENT_DEPTH
    if parent.depth + 1 > depth_cap:
        raise ToolError(
            f"Sub-agents may nest at most {depth_cap} deep and this agent is at depth "
            f"{parent.depth}: do this subtask yourself."
        )
    role = str(call.args.get("modelRole") or call.args.get("model_role") or "coder")
    try:
        spec = model_spec_resolve(role, fallback=parent.model)
    except ServiceError as exc:
        raise ToolError(str(exc)) from None
    _create_child(call, parent, spec, role)


def _create_child(call: ToolCall, parent: AgentSession, spec: str, role: str) -> AgentSession:
    title, description = str(call.args.get("title", "")), str(call.args.get("description", ""))
    with transaction.atomic():
        child = AgentSession.objects.create(
            task=f"{title}\n\n{description}",
            repo=parent.repo,
            workspace=parent.workspace,
            worker_queue=parent.worker_queue,
            status=AgentSession.Status.RUNNING,
            policy=parent.policy,
            project=parent.project,
            model=spec,
            creator=parent.creator,
            parent=parent,
            parent_call=call,
            depth=parent.depth + 1,
            max_iterations=settings.AGENTWEB_SUBAGENT_MAX_ITERATIONS,
            token_budget=parent.token_budget,
            active_skills=parent.active_skills,  # the same job: the parent's skills
        )
        ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.RUNNING).update(
            runner=f"{SUBAGENT_RUNNER}{child.pk}"
        )
        created = {"status": child.status, "task": child.task, "repo": child.repo}
        events.event_append(session_id=child.pk, type="session.created", data=created)
        events.event_append(
            session_id=parent.pk,
            type="agent.subagent_started",
            data={"tool_call": call.pk, "child": child.pk, "title": title, "role": role},
        )
        agent_turn_enqueue(session=child)
    return child


def subagent_report(*, call: ToolCall) -> engine.Outcome | None:
    """The result of a spawn_subagent call whose child has ended; None while it works."""
    child = AgentSession.objects.filter(parent_call=call).first()
    if child is None or child.status not in AgentSession.FINISHED_STATUSES:
        return None
    lines = [f"Sub-agent session {child.pk} ended: {child.status}."]
    lines.append(f"Summary: {child.summary or '(none)'}")
    if child.files_changed:
        lines.append("Files changed: " + ", ".join(child.files_changed))
    lines.append(f"Tokens: {child.tokens_in} in, {child.tokens_out} out.")
    status = ToolCall.Status.SUCCEEDED if child.status == "done" else ToolCall.Status.FAILED
    return engine.Outcome(status=status, result="\n".join(lines))
