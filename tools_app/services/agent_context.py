"""What the model sees of a session's conversation, and what the session spends on it.

When the conversation nears the model's context window, older turns are folded into a
summary written by the `fast` role; the task and the latest turns stay as they were.
The folded messages stay in the database (the timeline shows everything); only the
model's view is shorter."""

from __future__ import annotations

import json

from django.db.models import F

from tools_app.errors import ServiceError
from tools_app.live import events
from tools_app.models import AgentMessage, AgentSession
from tools_app.runtime import prompts
from tools_app.runtime.conversation import Message, Provider, ProviderError, user_message
from tools_app.services.providers import model_spec_resolve, provider_for

FOLD_AT = 0.75  # of the context window
KEEP_LATEST = 8  # messages kept as they are when older ones are folded
SUMMARY_HEADING = "Summary of the earlier work (older turns were folded to fit the context):\n"


def conversation_for(
    session: AgentSession, messages: list[AgentMessage], provider: Provider
) -> list[Message]:
    """The messages to send: folded first when they would fill most of the window."""
    context = _context(session, messages)
    if estimate_tokens(session.system_prompt, context) < FOLD_AT * provider.context_window:
        return context
    if _fold(session, messages):
        session.refresh_from_db(fields=["context_start", "context_summary"])
        return _context(session, messages)
    return context


def estimate_tokens(system: str, context: list[Message]) -> int:
    """About four characters a token: enough to know when to fold."""
    return (len(system) + len(json.dumps(context, ensure_ascii=False))) // 4


def _context(session: AgentSession, messages: list[AgentMessage]) -> list[Message]:
    contents = [message.content for message in messages]
    if not session.context_start:
        return contents
    summary = user_message(SUMMARY_HEADING + session.context_summary)
    return [contents[0], summary, *contents[session.context_start :]]


def _fold(session: AgentSession, messages: list[AgentMessage]) -> bool:
    start = max(session.context_start, 1)
    cut = next(
        (
            i
            for i in range(len(messages) - KEEP_LATEST, start, -1)
            if messages[i].role == "assistant"  # the kept part starts with a reply
        ),
        None,
    )
    if cut is None:
        return False
    folded = [message.content for message in messages[start:cut]]
    if session.context_summary:
        folded.insert(0, user_message(SUMMARY_HEADING + session.context_summary))
    summary = _summarise(session, folded)
    moved = AgentSession.objects.filter(pk=session.pk, context_start=session.context_start).update(
        context_start=cut, context_summary=summary
    )
    if moved:
        data = {"folded": cut - start, "kept_from": cut, "summary": summary}
        events.event_append(session_id=session.pk, type="agent.context_summarised", data=data)
    return bool(moved)


def _summarise(session: AgentSession, folded: list[Message]) -> str:
    """The `fast` role's summary; without one, the plain transcript's latest part."""
    transcript = prompts.transcript(folded)
    try:
        provider = provider_for(model_spec_resolve("fast", fallback=session.model))
        clipped = transcript[-provider.context_window * 2 :]
        reply = provider.complete(
            system="You write concise, factual summaries of a coding agent's work.",
            messages=[user_message(prompts.SUMMARY_REQUEST.format(transcript=clipped))],
            tools=[],
        )
    except (ProviderError, ServiceError) as exc:  # folding must not end the session
        note = f"(No summary could be written: {exc}.) The latest earlier steps:\n"
        return note + transcript[-8000:]
    count_tokens(session, reply.usage.input_tokens, reply.usage.output_tokens)
    return reply.text


def count_tokens(session: AgentSession, tokens_in: int, tokens_out: int) -> None:
    """Add a turn's usage to the session, and to every parent as its sub-agents' usage."""
    if not (tokens_in or tokens_out):
        return
    AgentSession.objects.filter(pk=session.pk).update(
        tokens_in=F("tokens_in") + tokens_in, tokens_out=F("tokens_out") + tokens_out
    )
    parent_id = session.parent_id
    while parent_id is not None:
        AgentSession.objects.filter(pk=parent_id).update(
            tokens_in=F("tokens_in") + tokens_in,
            tokens_out=F("tokens_out") + tokens_out,
            subagent_tokens_in=F("subagent_tokens_in") + tokens_in,
            subagent_tokens_out=F("subagent_tokens_out") + tokens_out,
        )
        parent_id = AgentSession.objects.values_list("parent_id", flat=True).get(pk=parent_id)
