"""Starting and following a runtime session from the command line (run_agent, demo)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from tools_app import services
from tools_app.models import AgentSession, Event

CLI_USER = "agentweb-cli"


def cli_user() -> Any:
    """Sessions started here belong to this account, so any reviewer (the admin too)
    may approve their calls under the four-eyes rule."""
    user, _ = get_user_model().objects.get_or_create(
        username=CLI_USER, defaults={"first_name": "agentweb command line"}
    )
    return user


def absolute_script(model: str) -> str:
    """`script:plan.json` is read by a worker elsewhere: make its path absolute here."""
    if model.startswith("script:"):
        return "script:" + str(Path(model.removeprefix("script:")).expanduser().resolve())
    return model


def start(*, repo: str, task: str, model: str, policy: str) -> AgentSession:
    try:
        return services.session_start(
            user=cli_user(), task=task, repo=repo, model=absolute_script(model), policy_name=policy
        )
    except services.Unavailable as exc:
        raise CommandError(f"{exc} Start the stack first: `make run`.") from None
    except services.ServiceError as exc:
        raise CommandError(str(exc)) from None


def follow(
    command: Any, session: AgentSession, *, timeout: float, until_waiting: bool = False
) -> AgentSession:
    """Print the session's events as they come until it ends (or waits, or time is up)."""
    deadline = time.monotonic() + timeout
    seq = 0
    while time.monotonic() < deadline:
        for event in Event.objects.filter(session=session, seq__gt=seq).order_by("seq"):
            seq = event.seq
            command.stderr.write(describe(event))
        session.refresh_from_db()
        if session.status in AgentSession.FINISHED_STATUSES or (
            until_waiting and session.status == "waiting"
        ):
            break
        time.sleep(0.3)
    return session


def describe(event: Event) -> str:
    data = event.data
    if event.type == "agent.message":
        tools = ", ".join(data.get("tool_uses", [])) or "no tool"
        text = (data.get("text") or "").strip().replace("\n", " ")[:160]
        return f"[{event.seq}] model: {text} → {tools}"
    if event.type.startswith("tool_call."):
        detail = f" ({data.get('reason')})" if data.get("reason") else ""
        line = f"[{event.seq}] call {data.get('tool_call')} {data.get('tool')}: "
        line += f"{data.get('status')}{detail}"
        if data.get("status") == "awaiting_approval":
            line += f"\n      → decide at {settings.AGENTWEB_BASE_URL}/approvals/"
        return line
    if event.type.startswith("session."):
        summary = data.get("summary")
        return f"[{event.seq}] session {event.type.removeprefix('session.')}" + (
            f": {summary}" if summary else ""
        )
    return f"[{event.seq}] {event.type}"
