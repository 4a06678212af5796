"""Approvals that need N people (issue 34, item 3): a rule's quorum counts distinct
people of its group, never the session's creator; a deny by anyone ends it; an edit
starts the count again, and what runs is exactly what all N approved. Checked through
the REST API and the browser's form with a real worker, and by the file on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from tests.integration.conftest import PASSWORD
from tests.integration.helpers import Api, call, start_session, wait_final
from tests.integration.test_admin import policy_form
from tools_app import services
from tools_app.core.policy.loader import PolicyInvalid
from tools_app.models import AgentSession, Approval, AuditEntry, Event, PolicyRule
from tools_app.selectors import records

# The flows run a real worker (eager); the checks of a policy file need only the database.
FLOW = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.eager]

RELEASE_RULE = {
    "tool": "write_file",
    "args": {"path": "deploy/*"},
    "decision": "require_approval",
    "reason": "a deploy takes two people of the release team",
    "approvals": {"count": 2, "group": "release"},
}


def person(name: str, *groups: str) -> User:
    user = User.objects.create_user(name, password=PASSWORD)
    for group in ("reviewers", *groups):
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


def review(user: User) -> Api:
    return Api(services.api_token_create(user=user, scope="review"))


def decide(api: Api, call_id: int, decision: str = "approve", **extra: Any) -> Any:
    return api.post(f"/tool-calls/{call_id}/decision", {"decision": decision, **extra})


@pytest.fixture
def release_policy() -> str:
    Group.objects.get_or_create(name="release")
    services.policy_import(data={"name": "release", "rules": [RELEASE_RULE]})
    return "release"


@FLOW[0]
@FLOW[1]
def test_two_of_the_release_group_approve_and_an_edit_starts_the_count_again(
    creator: User, workspace: Path, release_policy: str
) -> None:
    for group in ("reviewers", "release"):  # the creator reviews too: never her own call
        creator.groups.add(Group.objects.get_or_create(name=group)[0])
    bob, carol, dave = person("bob", "release"), person("carol", "release"), person("dave")
    agent = Api(services.api_token_create(user=creator, scope="agent"))
    session = start_session(agent, workspace, policy=release_policy)
    waiting = call(agent, session, "write_file", wait=0.01, path="deploy/v.txt", content="v1\n")
    assert waiting["status"] == "awaiting_approval"
    assert waiting["approvals"] == {
        "needed": 2, "group": "release", "approved_by": [], "still_needed": 2
    }  # fmt: skip

    own = decide(review(creator), waiting["id"])
    assert own.status_code == 403 and "creator" in own.json()["detail"]
    outside = decide(review(dave), waiting["id"])
    assert outside.status_code == 403 and "'release'" in outside.json()["detail"]
    assert not Approval.objects.exists()

    first = decide(review(bob), waiting["id"])
    assert first.status_code == 200, first.content
    assert first.json()["status"] == "awaiting_approval"
    assert first.json()["approvals"]["approved_by"] == ["bob"]
    again = decide(review(bob), waiting["id"])
    assert again.status_code == 409 and "already approved" in again.json()["detail"]
    remembered = decide(review(carol), waiting["id"], remember=True)
    assert remembered.status_code == 422 and "needs 2 approvals" in remembered.json()["detail"]

    edited = decide(review(carol), waiting["id"], args={"path": "deploy/v.txt", "content": "v2\n"})
    assert edited.status_code == 200, edited.content
    assert edited.json()["status"] == "awaiting_approval"
    assert edited.json()["approvals"]["approved_by"] == ["carol"]  # bob saw other content
    assert not Path(session["workspace"], "deploy/v.txt").exists()

    browser = Client()
    assert browser.login(username="bob", password=PASSWORD)
    card = browser.get(f"/approvals/cards/{waiting['id']}/").content.decode()
    assert "1 of 2: carol" in card and "Approve &amp; remember" not in card
    answer = browser.post(f"/tool-calls/{waiting['id']}/decide", {"action": "approve"})
    assert answer.status_code == 302

    done = wait_final(review(bob), waiting["id"])
    assert done["status"] == "succeeded", done
    assert done["decided_by"] == "bob"
    assert Path(session["workspace"], "deploy/v.txt").read_text() == "v2\n"
    partial = AuditEntry.objects.filter(tool_call_ref=waiting["id"], action="decision")
    assert [entry.actor_name for entry in partial.order_by("id")] == ["bob", "carol", "bob"]
    shown = Event.objects.filter(session_id=session["id"], type="tool_call.awaiting_approval")
    assert [e.data["approvals"]["approved_by"] for e in shown.order_by("seq")][-1] == ["carol"]


@FLOW[0]
@FLOW[1]
def test_a_deny_by_any_reviewer_ends_it_and_a_remembered_rule_never_lowers_it(
    creator: User, workspace: Path, release_policy: str
) -> None:
    bob, dave = person("bob", "release"), person("dave")
    agent = Api(services.api_token_create(user=creator, scope="agent"))
    session = start_session(agent, workspace, policy=release_policy)
    policy = records.policy_by_name(release_policy)
    assert policy is not None
    policy.rules.update(position=1)
    PolicyRule.objects.create(  # bob once remembered every write: it comes first
        policy=policy, position=0, tool="write_file", args={"path": "*"},
        decision="allow", created_by=bob, remembered=True,
    )  # fmt: skip
    plain = call(agent, session, "write_file", path="notes.txt", content="hi\n")
    assert plain["status"] == "succeeded"  # the remembered rule still allows other writes
    waiting = call(agent, session, "write_file", wait=0.01, path="deploy/v.txt", content="v1\n")
    assert waiting["status"] == "awaiting_approval"
    assert waiting["approvals"]["needed"] == 2

    assert decide(review(bob), waiting["id"]).status_code == 200
    denied = decide(review(dave), waiting["id"], "deny", reason="not today")
    assert denied.status_code == 200 and denied.json()["status"] == "denied"
    assert not Path(session["workspace"], "deploy/v.txt").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("approvals", "field"),
    [
        ({"count": 0}, "rules[0].approvals.count"),
        ({"count": 11}, "rules[0].approvals.count"),
        ({"count": True}, "rules[0].approvals.count"),
        ({"count": 2, "team": "x"}, "rules[0].approvals.team"),
        ({"count": 2, "group": "nobody"}, "rules[0].approvals.group"),
        ("two", "rules[0].approvals"),
    ],
)
def test_a_bad_quorum_is_refused_whole_naming_its_field(approvals: object, field: str) -> None:
    with pytest.raises(PolicyInvalid) as refused:
        services.policy_import(
            data={"name": "q", "rules": [RELEASE_RULE | {"approvals": approvals}]}
        )
    assert field in str(refused.value)
    assert records.policy_by_name("q") is None


@pytest.mark.django_db
def test_a_quorum_is_only_for_rules_that_ask_a_person_and_survives_export() -> None:
    Group.objects.create(name="release")
    allow = RELEASE_RULE | {"decision": "allow"}
    with pytest.raises(PolicyInvalid, match="only for a rule whose decision is require_approval"):
        services.policy_import(data={"name": "q", "rules": [allow]})
    policy = services.policy_import(data={"name": "q", "rules": [RELEASE_RULE]})
    exported = records.policy_as_dict(policy)
    assert exported["rules"][0]["approvals"] == {"count": 2, "group": "release"}
    assert records.policy_spec(policy).rules[0].quorum is not None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("decision", "group", "error"),
    [
        ("allow", "", "only for a rule whose decision is require_approval"),
        ("require_approval", "nobody", "No group is named &#x27;nobody&#x27;"),
    ],
)
def test_the_admin_refuses_a_quorum_it_could_never_meet(
    admin_client: Client, decision: str, group: str, error: str
) -> None:
    policy = records.policy_by_name("default")
    assert policy is not None
    rule = {"position": "0", "tool": "write_file", "args": "{}", "decision": decision}
    rule |= {"reason": "", "approvals": "2", "approvers": group}
    form = policy_form(policy, **{f"rules-0-{key}": value for key, value in rule.items()})
    form["rules-TOTAL_FORMS"] = "1"
    answer = admin_client.post(f"/admin/tools_app/policy/{policy.pk}/change/", form)
    assert answer.status_code == 200 and error in answer.content.decode()
    assert not policy.rules.exists()


@pytest.mark.django_db
def test_a_builtin_checks_approval_asks_the_policys_builtin_approvals(
    creator: User, workspace: Path
) -> None:
    data = records.policy_as_dict(records.policy_by_name("default")) | {  # type: ignore[arg-type]
        "name": "two-for-builtins", "builtin_approvals": 2,
    }  # fmt: skip
    data.pop("description")
    policy = services.policy_import(data=data)
    bob = person("bob")
    PolicyRule.objects.create(  # bob once remembered every write, before the policy asked two
        policy=policy, position=0, tool="write_file", args={"path": "*"},
        decision="allow", created_by=bob, remembered=True,
    )  # fmt: skip
    session = AgentSession.objects.create(
        task="t", repo=str(workspace), workspace=str(workspace), creator=creator,
        status=AgentSession.Status.RUNNING, policy=policy,
    )  # fmt: skip
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": ".env", "content": "KEY=1\n"}
    )
    assert call.status == "awaiting_approval" and call.rule.startswith("builtin:")
    assert (call.approvals_needed, call.approvers) == (2, "")
    plain = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": "notes.txt", "content": "hi\n"}
    )
    assert plain.status == "succeeded"  # the remembered rule allows what no check holds
