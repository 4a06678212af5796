"""The agent loop as a continuation: one model turn per task, everything in the database.

A turn task (`agent_turn`) looks at where the conversation stands and takes the next
step: ask the model (claimed once per turn), or settle the tool uses of its last reply
in order, each through the engine and the policy exactly like an external agent's call.
When a call waits for a person, the task ends and holds no worker; the call's final
state wakes the session again (`lifecycle.session_wake_agent`). So a session resumes
after an approval, a crash or a restart of everything from the database alone.
"""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from tools_app.live import events
from tools_app.models import AgentMessage, AgentSession
from tools_app.runtime import prompts
from tools_app.runtime.conversation import (
    Message,
    Provider,
    ProviderError,
    Reply,
    tool_results_message,
    user_message,
)
from tools_app.services import agent_context
from tools_app.services.agent_tools import session_tools, settle_tool_uses
from tools_app.services.conversations import conversation_messages
from tools_app.services.lifecycle import driving_session
from tools_app.services.providers import provider_for
from tools_app.services.queueing import agent_turn_enqueue
from tools_app.services.sessions import LIVE_STATUSES, session_finish
from tools_app.services.skill_calls import skill_instructions
from tools_app.services.tool_calls import runner_id

logger = logging.getLogger(__name__)

SessionStatus = AgentSession.Status


def agent_turn(*, session_id: int) -> None:
    """Take the session's next step; a duplicate or stale task finds nothing to do."""
    token = driving_session.set(session_id)
    try:
        _advance(session_id)
    finally:
        driving_session.reset(token)


def _advance(session_id: int) -> None:
    session = AgentSession.objects.select_related("policy").get(pk=session_id)
    if session.status not in LIVE_STATUSES or not session.model:
        return
    messages = conversation_messages(session)
    if not messages:
        messages = [_begin(session)]
    last = messages[-1]
    if last.role == "assistant" and last.content.get("tool_uses"):
        _settle(session, messages)
    elif last.role == "assistant":
        _after_text_only(session, messages)
    else:
        reply = _model_turn(session, messages)
        if reply is not None and reply.content.get("tool_uses"):
            _settle(session, [*messages, reply])
        elif reply is not None:
            agent_turn_enqueue(session=session)


def _begin(session: AgentSession) -> AgentMessage:
    """The first message: the task. The system prompt is fixed once, with the session."""
    instructions = skill_instructions(session)
    system = prompts.system_prompt(session.task, depth=session.depth, instructions=instructions)
    AgentSession.objects.filter(pk=session.pk, system_prompt="").update(system_prompt=system)
    session.refresh_from_db(fields=["system_prompt"])
    message, _ = AgentMessage.objects.get_or_create(
        session=session, index=0, defaults={"role": "user", "content": user_message(session.task)}
    )
    return message


# --- tool uses ---------------------------------------------------------------------------


def _settle(session: AgentSession, messages: list[AgentMessage]) -> None:
    """Settle the last reply's tool uses; once all have results, record them and go on."""
    results = settle_tool_uses(session, messages)
    if results is None:
        return  # a call waits for a person, a sub-agent or another worker
    session.refresh_from_db()
    if session.status not in LIVE_STATUSES:
        return  # task_done ended it, or it was cancelled meanwhile
    if _append(session, len(messages), tool_results_message(results)):
        agent_turn_enqueue(session=session)


def _after_text_only(session: AgentSession, messages: list[AgentMessage]) -> None:
    """A reply without a tool call: remind the model once, then end the session."""
    before = messages[-2].content if len(messages) > 1 else {}
    if before.get("role") == "user" and before.get("content") == prompts.TEXT_ONLY_NUDGE:
        text = messages[-1].content.get("content", "")
        summary = f"The agent stopped without calling task_done. Its last words: {text}"
        session_finish(session_id=session.pk, status=SessionStatus.FAILED, summary=summary)
        return
    if _append(session, len(messages), user_message(prompts.TEXT_ONLY_NUDGE)):
        agent_turn_enqueue(session=session)


def _append(session: AgentSession, index: int, message: Message) -> bool:
    """Record a message at its place; False when another task already did."""
    try:
        with transaction.atomic():
            AgentMessage.objects.create(
                session=session, index=index, role=message["role"], content=message
            )
    except IntegrityError:
        return False
    return True


# --- model turns -------------------------------------------------------------------------


def _model_turn(session: AgentSession, messages: list[AgentMessage]) -> AgentMessage | None:
    """Ask the model for the next reply, once; None when it was not asked or not kept."""
    if _stop_for_limits(session):
        return None
    try:
        provider = provider_for(session.model)
        context = agent_context.conversation_for(session, messages, provider)
    except ProviderError as exc:
        _provider_failed(session, exc)
        return None
    if not _claim_turn(session, len(messages)):
        return None
    try:
        reply = provider.complete(
            system=session.system_prompt, messages=context, tools=session_tools(session)
        )
    except ProviderError as exc:
        _release_turn(session)
        _provider_failed(session, exc)
        return None
    except BaseException:
        _release_turn(session)  # a bug or a time limit: the sweep may ask again later
        raise
    return _record_reply(session, len(messages), reply, provider)


def _stop_for_limits(session: AgentSession) -> bool:
    """End a session that used up its turns or tokens, with a reason a person can read."""
    reason = ""
    if session.iterations >= session.max_iterations:
        reason = (
            f"Stopped: the agent used all {session.max_iterations} of its model turns "
            "without calling task_done."
        )
    used = session.tokens_in + session.tokens_out
    if not reason and session.token_budget and used >= session.token_budget:
        reason = f"Stopped: the session used {used} tokens; its budget is {session.token_budget}."
    if reason:
        session_finish(session_id=session.pk, status=SessionStatus.FAILED, summary=reason)
    return bool(reason)


def _claim_turn(session: AgentSession, index: int) -> bool:
    """One process asks the model for a given turn; the others leave it alone."""
    claimed = AgentSession.objects.filter(
        pk=session.pk, turn_runner="", status__in=LIVE_STATUSES
    ).update(turn_runner=runner_id(), turn_started_at=timezone.now())
    if claimed and AgentMessage.objects.filter(session=session, index=index).exists():
        _release_turn(session)  # another task answered this turn a moment ago
        return False
    return bool(claimed)


def _release_turn(session: AgentSession) -> None:
    AgentSession.objects.filter(pk=session.pk, turn_runner=runner_id()).update(turn_runner="")


def _record_reply(
    session: AgentSession, index: int, reply: Reply, provider: Provider
) -> AgentMessage | None:
    """Keep the reply, its usage and the turn count in one transaction, then say so."""
    usage = reply.usage
    with transaction.atomic():
        released = AgentSession.objects.filter(
            pk=session.pk, turn_runner=runner_id(), status__in=LIVE_STATUSES
        ).update(turn_runner="", iterations=F("iterations") + 1)
        agent_context.count_tokens(session, usage.input_tokens, usage.output_tokens)
        if not released:
            return None  # cancelled (or taken over) while the model was thinking
        message = AgentMessage.objects.create(
            session=session,
            index=index,
            role="assistant",
            content=reply.as_message(),
            tokens_in=usage.input_tokens,
            tokens_out=usage.output_tokens,
        )
        events.event_append(
            session_id=session.pk, type="agent.message", data=_message_event(message, provider)
        )
    return message


def _message_event(message: AgentMessage, provider: Provider) -> dict[str, object]:
    return {
        "index": message.index,
        "text": message.content.get("content", ""),
        "tool_uses": [use["name"] for use in message.content.get("tool_uses", [])],
        "tokens": {"input": message.tokens_in, "output": message.tokens_out},
        "model": provider.spec,
    }


def _provider_failed(session: AgentSession, exc: ProviderError) -> None:
    """A provider error ends the session with its message: no crash loop, no retry storm."""
    logger.warning("session %s: the model provider failed: %s", session.pk, exc)
    summary = f"The model provider failed: {exc}"
    session_finish(session_id=session.pk, status=SessionStatus.FAILED, summary=summary)
