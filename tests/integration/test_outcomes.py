"""Outcomes (issue 31, item 1): a call's status stays the lifecycle's, and what its run
changed is its own fact, read where a person reads the call: the API, the events, the
audit trail, the webhook body and every badge ("succeeded · nothing applied: …").
Commands run in the real sandbox on a real git repository."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.integration.conftest import PASSWORD
from tests.integration.helpers import Api
from tests.integration.notify_servers import Receiver, serve
from tests.unit.helpers import requires_cow
from tools_app import services
from tools_app.models import AgentSession, AuditEntry, Channel, Event, Policy, ToolCall
from tools_app.services.notifications import deliveries_create

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), requires_cow]

OVER_LIMIT = "succeeded · nothing applied: 600 lines over the limit of 500"


@pytest.fixture(autouse=True)
def local_channels(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.AGENTWEB_NOTIFY_HOSTS = ["127.0.0.1"]
    settings.AGENTWEB_NOTIFY_PRIVATE_HOSTS = ["127.0.0.1"]  # the receiver is on loopback
    settings.AGENTWEB_BASE_URL = "https://agentweb.example"


@pytest.fixture
def session(workspace: Path, creator: User) -> AgentSession:
    return AgentSession.objects.create(
        task="add a dependency", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
        creator=creator,
    )  # fmt: skip


def run_script(session: AgentSession, body: str) -> ToolCall:
    """A script the policy allows without a person: only its effect tells what it did."""
    Path(session.workspace, "gen.sh").write_text(body)
    return services.tool_call_run_in_process(
        session=session, tool="run_command", args={"command": "bash gen.sh"}
    )


def browser(user: User) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def test_a_refused_effect_succeeds_but_says_nothing_was_applied(
    session: AgentSession, rita: Api
) -> None:
    call = run_script(session, "seq 1 600 > gen.txt\n")
    body = rita.get(f"/tool-calls/{call.pk}").json()
    assert (body["status"], body["outcome"]) == ("succeeded", "refused")
    assert body["outcome_detail"] == "nothing applied: 600 lines over the limit of 500"
    assert (body["held_call"], body["network"]) == (None, "withheld")
    finished = Event.objects.filter(session=session, type="tool_call.succeeded").last()
    assert finished is not None and finished.data["outcome"] == "refused"
    entry = AuditEntry.objects.get(action="tool_call.outcome", tool_call_ref=call.pk)
    assert (entry.via, entry.details["outcome"]) == ("system", "refused")
    assert entry.reason == body["outcome_detail"]


def test_the_session_page_and_list_show_the_status_with_the_outcome(
    session: AgentSession, reviewer: User
) -> None:
    run_script(session, "seq 1 600 > gen.txt\n")
    client = browser(reviewer)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert OVER_LIMIT in page
    listing = client.get("/sessions/").content.decode()
    assert "1 call with changes not applied or no network" in listing


def test_a_held_effect_names_the_call_it_waits_as(session: AgentSession, reviewer: User) -> None:
    call = run_script(session, "seq 1 250 > big.txt\n")
    call.refresh_from_db()
    held = session.tool_calls.get(tool="apply_command_effect")
    assert (call.outcome, call.held_call_id) == ("held", held.pk)
    assert call.outcome_detail.startswith(f"held for a person as call {held.pk}: 250 lines")
    card = browser(reviewer).get(f"/approvals/cards/{call.pk}/").content.decode()
    assert f"succeeded · held for a person as call {held.pk}" in card
    assert f'href="/approvals/#call-{held.pk}"' in card


def test_an_applied_effect_and_an_empty_one_say_so(session: AgentSession, rita: Api) -> None:
    applied = run_script(session, "seq 1 30 > small.txt\n")
    assert rita.get(f"/tool-calls/{applied.pk}").json()["outcome_detail"] == (
        "applied: 1 file (30 changed lines)"
    )
    nothing = run_script(session, "true\n")
    assert (nothing.outcome, nothing.outcome_detail) == (
        "nothing",
        "nothing to apply: the command changed no file",
    )


def test_a_command_that_tried_the_network_it_did_not_have_says_so(
    session: AgentSession, rita: Api
) -> None:
    """A command of no known class has no hosts, so no network; its resolver failed
    inside, and the call still `succeeded`, its outcome saying how hosts are given."""
    call = run_script(
        session,
        "python3 -c \"import socket; socket.getaddrinfo('registry.npmjs.org', 443)\"\n",
    )
    body = rita.get(f"/tool-calls/{call.pk}").json()
    assert (body["status"], body["outcome"], body["network"]) == ("succeeded", "nothing", "missing")
    assert "no network: it tried to reach the network (" in body["outcome_detail"]
    assert "command_hosts" in body["outcome_detail"]


def test_a_tool_that_runs_no_command_records_no_outcome(session: AgentSession) -> None:
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": "a.txt", "content": "a\n"}
    )
    assert (call.status, call.outcome, call.network, call.badge) == (
        "succeeded",
        "",
        "",
        "succeeded",
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    server = serve(found)
    yield found
    server.shutdown()


def test_the_webhook_body_carries_the_outcome(session: AgentSession, receiver: Receiver) -> None:
    channel = Channel.objects.create(
        name="hook", kind="webhook", url=f"{receiver.url}/hook", secret=receiver.secret
    )
    call = run_script(session, "seq 1 600 > gen.txt\n")
    deliveries_create(call=call, event="tool_call.decided", channels=[channel])
    (sent,) = receiver.received
    told = sent.json()["tool_call"]
    assert sent.signed and (told["status"], told["outcome"]) == ("succeeded", "refused")
    assert told["outcome_detail"] == "nothing applied: 600 lines over the limit of 500"
    assert (told["held_call"], told["network"]) == (None, "withheld")


def test_a_webhook_told_of_the_decision_hears_what_the_run_changed(
    session: AgentSession, receiver: Receiver, reviewer: User
) -> None:
    """Waiting, decided, then finished with the outcome: the decision alone does not say
    that the approved command's 600 lines were never applied."""
    Policy.objects.filter(name="default").update(approval_commands=["bash gen.sh"])
    Channel.objects.create(
        name="hook", kind="webhook", url=f"{receiver.url}/hook", secret=receiver.secret
    )
    waiting = run_script(session, "seq 1 600 > gen.txt\n")
    assert waiting.status == "awaiting_approval"
    services.tool_call_decide(call=waiting, user=reviewer, scope="session", decision="approve")
    events = [sent.json()["event"] for sent in receiver.received]
    assert events == ["tool_call.waiting", "tool_call.decided", "tool_call.finished"]
    finished = receiver.received[-1].json()
    assert finished["text"] == f"Tool call {waiting.pk} (run_command) {OVER_LIMIT}"
    assert finished["tool_call"]["outcome"] == "refused"
    assert finished["decision"]["decision"] == "approve"
    assert not Path(session.workspace, "gen.txt").exists()
