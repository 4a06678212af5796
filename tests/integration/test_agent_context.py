"""Context folding: when a conversation nears the model's window, older turns become a
summary written by the `fast` role (here the session's own script), the task and the
latest turns stay, and the database keeps everything."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.integration.agent_helpers import script, tool
from tools_app.models import AgentMessage, AgentSession, Event, Policy
from tools_app.runtime.conversation import tool_result, tool_results_message, user_message
from tools_app.runtime.providers.scripted import ScriptedProvider
from tools_app.services import agent_context

pytestmark = pytest.mark.django_db

SUMMARY = "Read README.md ten times; nothing changed yet."


def a_long_session(creator: User, model: str, turns: int) -> AgentSession:
    session = AgentSession.objects.create(
        task="fix the bug",
        repo="/nowhere",
        workspace="/nowhere",
        status="running",
        policy=Policy.objects.get(name="default"),
        model=model,
        creator=creator,
        system_prompt="You are an agent.",
    )
    rows = [user_message("fix the bug")]
    for turn in range(turns):
        use = {"id": f"u{turn}", "name": "read_file", "args": {"path": "README.md"}}
        rows.append({"role": "assistant", "content": f"turn {turn}", "tool_uses": [use]})
        content = f"result {turn} " + "x" * 400
        rows.append(tool_results_message([tool_result(f"u{turn}", "read_file", content)]))
    for index, row in enumerate(rows):
        AgentMessage.objects.create(session=session, index=index, role=row["role"], content=row)
    return session


def test_older_turns_are_folded_into_a_summary_and_the_latest_kept(
    creator: User, tmp_path: Path
) -> None:
    model = script(tmp_path, [{"say": SUMMARY}, tool("read_file", path="README.md")])
    session = a_long_session(creator, model, turns=10)
    stored = list(session.messages.all())
    small = ScriptedProvider(model.removeprefix("script:"), context_window=1000)
    context = agent_context.conversation_for(session, stored, small)
    session.refresh_from_db()
    assert session.context_start == 13  # the kept part starts with a reply
    assert session.context_summary == SUMMARY
    assert context[0] == stored[0].content
    assert context[1] == user_message(agent_context.SUMMARY_HEADING + SUMMARY)
    assert context[2:] == [message.content for message in stored[13:]]
    assert context[2]["role"] == "assistant"
    event = Event.objects.get(session=session, type="agent.context_summarised")
    assert event.data == {"folded": 12, "kept_from": 13, "summary": SUMMARY}
    assert session.tokens_in > 0 and session.tokens_out > 0  # the summariser's turn
    assert AgentMessage.objects.filter(session=session).count() == 21  # nothing deleted
    again = agent_context.conversation_for(session, stored, small)
    assert again == context  # still over the window, but nothing older is left to fold
    assert Event.objects.filter(type="agent.context_summarised").count() == 1


def test_a_conversation_well_inside_the_window_is_sent_whole(creator: User, tmp_path: Path) -> None:
    model = script(tmp_path, [{"say": SUMMARY}])
    session = a_long_session(creator, model, turns=3)
    stored = list(session.messages.all())
    provider = ScriptedProvider(model.removeprefix("script:"))
    assert agent_context.conversation_for(session, stored, provider) == [
        message.content for message in stored
    ]
    session.refresh_from_db()
    assert (session.context_start, session.tokens_in) == (0, 0)
