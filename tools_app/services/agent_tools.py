"""A reply's tool uses, settled in order: each becomes one ToolCall through the engine and
the policy, exactly like an external agent's call, and gets exactly one result."""

from __future__ import annotations

import json
from typing import Any

from tools_app.models import AgentMessage, AgentSession, Decision, ToolCall
from tools_app.runtime import prompts
from tools_app.runtime.conversation import ToolSchema, tool_result
from tools_app.selectors import records
from tools_app.services.sessions import session_finish
from tools_app.services.subagents import SUBAGENT_RUNNER
from tools_app.services.tool_calls import (
    tool_call_evaluate,
    tool_call_finish_subagent,
    tool_call_receive_from_agent,
)

Status = ToolCall.Status
REPEAT_WINDOW, REPEAT_LIMIT = 6, 3


def session_tools(session: AgentSession) -> list[ToolSchema]:
    """The tools a session offers its model, the same as `GET /api/sessions/{id}/tools`."""
    return [ToolSchema(**schema) for schema in records.session_tool_schemas(session)]


def settle_tool_uses(
    session: AgentSession, messages: list[AgentMessage]
) -> list[dict[str, Any]] | None:
    """One result per tool use of the last reply, in order; None while one is not final."""
    reply = messages[-1]
    known = [tool.name for tool in session_tools(session)]
    history = _recent_calls(messages[:-1])
    results: list[dict[str, Any]] = []
    for position, use in enumerate(reply.content["tool_uses"]):
        result = _settle_one(session, f"{reply.index}:{position}", use, known)
        if result is None:
            return None
        signature = prompts.call_signature(use["name"], use.get("args", {}))
        history.append(signature)
        count = prompts.repeated_count(history[-REPEAT_WINDOW:], signature)
        if count >= REPEAT_LIMIT:
            result["content"] += prompts.REPEAT_NUDGE.format(count=count, window=REPEAT_WINDOW)
        results.append(result)
    return results


def _recent_calls(messages: list[AgentMessage]) -> list[tuple[str, str]]:
    calls = [
        prompts.call_signature(use["name"], use.get("args", {}))
        for message in messages
        if message.role == "assistant"
        for use in message.content.get("tool_uses", [])
    ]
    return calls[-REPEAT_WINDOW:]


def _settle_one(
    session: AgentSession, key: str, use: dict[str, Any], known: list[str]
) -> dict[str, Any] | None:
    use_id, name = str(use["id"]), str(use["name"])
    if use.get("args_error"):
        text = (
            f"The arguments for {name} could not be read ({use['args_error']}). "
            "Send them again as one JSON object."
        )
        return tool_result(use_id, name, text, is_error=True)
    if name not in known:
        return tool_result(use_id, name, prompts.unknown_tool(name, known), is_error=True)
    call = _run(session, key, name, use.get("args", {}))
    if call.status not in ToolCall.FINAL_STATUSES:
        return None
    if call.tool == "task_done" and call.status == Status.SUCCEEDED:
        _finish_done(session, call)
    ok = call.status == Status.SUCCEEDED
    return tool_result(use_id, name, result_text(call), is_error=not ok)


def _run(session: AgentSession, key: str, name: str, args: Any) -> ToolCall:
    """The call for this tool use (made once), taken as far as it goes without a person."""
    call = tool_call_receive_from_agent(session=session, key=key, tool=name, args=args)
    if call.status == Status.PENDING:
        call = tool_call_evaluate(tool_call_id=call.pk)
    if call.status == Status.RUNNING and call.runner.startswith(SUBAGENT_RUNNER):
        call = tool_call_finish_subagent(call=call)
    return call


def _finish_done(session: AgentSession, call: ToolCall) -> None:
    files = [str(path) for path in call.args.get("files_changed", [])]
    summary = str(call.args.get("summary", "")).strip()
    session_finish(
        session_id=session.pk, status=AgentSession.Status.DONE, summary=summary, files_changed=files
    )


def result_text(call: ToolCall) -> str:
    """What the model reads about a final call: its output, or why it did not run."""
    human = Decision.objects.filter(tool_call=call).first()
    if call.status == Status.SUCCEEDED:
        if human is not None and human.edited_args is not None:
            edited = json.dumps(call.args, ensure_ascii=False)
            note = f"A reviewer edited your arguments before approving; what ran: {edited}"
            return f"{note}\n\n{call.result}"
        return call.result
    if call.status == Status.DENIED:
        if human is not None:
            return call.result  # "Denied by a reviewer: <their words>"
        return f"Denied by the policy ({call.rule}): {call.result or call.reason}"
    if call.status == Status.FAILED:
        return f"Error: {call.result}"
    return call.result  # expired or cancelled: the note says why it did not run
