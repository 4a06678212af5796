"""Django admin: an admin edits policies; audit rows cannot be changed there."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tools_app.models import AgentSession, Policy, PolicyRule, ToolCall

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client: Client) -> Client:
    admin = User.objects.create_superuser("ada", "ada@example.com", "a-long-password")
    client.force_login(admin)
    return client


def policy_form(policy: Policy, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": policy.name,
        "description": policy.description,
        "protected_paths": "\n".join(policy.protected_paths),
        "blocked_commands": "\n".join(policy.blocked_commands),
        "approval_commands": "",
        "web_allow_hosts": "",
        "max_diff_lines": policy.max_diff_lines,
        "require_approval_above": policy.require_approval_above,
        "approval_timeout_seconds": policy.approval_timeout_seconds,
        "rules-TOTAL_FORMS": "0",
        "rules-INITIAL_FORMS": "0",
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
    }
    data.update(changes)
    return data


def test_an_admin_sees_the_default_policy(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    page = admin_client.get(f"/admin/tools_app/policy/{policy.pk}/change/")
    assert page.status_code == 200
    assert b".github/**" in page.content


def test_an_admin_edits_the_default_policy_and_its_version_moves(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    answer = admin_client.post(
        f"/admin/tools_app/policy/{policy.pk}/change/",
        policy_form(policy, max_diff_lines=300, protected_paths="secrets/**\n.env"),
    )
    assert answer.status_code == 302
    policy.refresh_from_db()
    assert policy.max_diff_lines == 300
    assert policy.protected_paths == ["secrets/**", ".env"]
    assert policy.version == 2


def test_an_admin_adds_a_rule(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    form = policy_form(
        policy,
        **{
            "rules-TOTAL_FORMS": "1",
            "rules-0-position": "0",
            "rules-0-tool": "run_command",
            "rules-0-args": '{"command": "make *"}',
            "rules-0-decision": "allow",
            "rules-0-reason": "builds are fine",
        },
    )
    answer = admin_client.post(f"/admin/tools_app/policy/{policy.pk}/change/", form)
    assert answer.status_code == 302
    assert PolicyRule.objects.get().args == {"command": "make *"}


def test_a_rule_with_a_bad_regex_is_refused_naming_the_field(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    form = policy_form(
        policy,
        **{
            "rules-TOTAL_FORMS": "1",
            "rules-0-position": "0",
            "rules-0-tool": "read_file",
            "rules-0-args": '{"path": "re:(unclosed"}',
            "rules-0-decision": "deny",
            "rules-0-reason": "",
        },
    )
    answer = admin_client.post(f"/admin/tools_app/policy/{policy.pk}/change/", form)
    assert answer.status_code == 200
    assert b"args.path" in answer.content
    assert not PolicyRule.objects.exists()


def test_a_negative_threshold_is_refused(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    answer = admin_client.post(
        f"/admin/tools_app/policy/{policy.pk}/change/", policy_form(policy, max_diff_lines=-5)
    )
    assert answer.status_code == 200
    policy.refresh_from_db()
    assert policy.max_diff_lines == 500


def test_tool_calls_are_read_only_in_admin(admin_client: Client) -> None:
    session = AgentSession.objects.create(
        task="t", repo="/r", workspace="/r", policy=Policy.objects.get(name="default")
    )
    call = ToolCall.objects.create(session=session, tool="read_file", status="succeeded")
    page = admin_client.get(f"/admin/tools_app/toolcall/{call.pk}/change/")
    assert page.status_code == 200
    assert b'name="_save"' not in page.content
    assert admin_client.get("/admin/tools_app/toolcall/add/").status_code == 403
    deleted = admin_client.post(f"/admin/tools_app/toolcall/{call.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    assert ToolCall.objects.filter(pk=call.pk).exists()


def test_anonymous_visitors_are_sent_to_the_login_page(client: Client) -> None:
    answer = client.get("/admin/tools_app/policy/")
    assert answer.status_code == 302
    assert "/admin/login/" in answer["Location"]
