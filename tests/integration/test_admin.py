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
        "escalate_after_seconds": policy.escalate_after_seconds,
        "command_timeout_limit": policy.command_timeout_limit,
        "builtin_approvals": policy.builtin_approvals,
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


# --- the policy list, rules in order, the loader's errors on their fields -----------------


def test_the_policy_list_counts_rules_and_protected_paths(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    PolicyRule.objects.create(policy=policy, tool="read_file", decision="allow")
    PolicyRule.objects.create(policy=policy, tool="run_command", decision="deny")
    page = admin_client.get("/admin/tools_app/policy/")
    assert page.status_code == 200
    row = page.context["cl"].result_list.get(name="default")
    assert row.rule_count == 2
    text = page.content.decode()
    for column in ("name", "rule_count", "protected_path_count", "require_distinct_reviewer",
                   "version", "updated_at"):  # fmt: skip
        assert f'class="sortable column-{column}' in text or f'class="column-{column}' in text
    assert f'<td class="field-protected_path_count">{len(policy.protected_paths)}</td>' in text


def test_the_policy_list_filters_on_distinct_reviewers(admin_client: Client) -> None:
    Policy.objects.create(name="strict", require_distinct_reviewer=True)
    page = admin_client.get("/admin/tools_app/policy/?require_distinct_reviewer__exact=1")
    assert [policy.name for policy in page.context["cl"].result_list] == ["strict"]


def test_the_rules_are_shown_in_the_order_the_engine_tries_them(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    PolicyRule.objects.create(policy=policy, position=2, tool="second_tool", decision="allow")
    PolicyRule.objects.create(policy=policy, position=1, tool="first_tool", decision="deny")
    page = admin_client.get(f"/admin/tools_app/policy/{policy.pk}/change/").content.decode()
    assert page.index("first_tool") < page.index("second_tool")


def test_a_bad_blocked_command_is_reported_on_its_field(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    answer = admin_client.post(
        f"/admin/tools_app/policy/{policy.pk}/change/",
        policy_form(policy, blocked_commands="rm -rf /\nre:(unclosed"),
    )
    assert answer.status_code == 200
    errors = answer.context["adminform"].form.errors
    assert "blocked_commands[1]" in " ".join(errors["blocked_commands"])


def test_a_command_host_too_wide_is_refused_and_nothing_changes(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    before = (policy.version, policy.command_hosts)
    answer = admin_client.post(
        f"/admin/tools_app/policy/{policy.pk}/change/",
        policy_form(policy, command_hosts="npm registry.npmjs.org\npip *\ngit 127.0.0.1"),
    )
    assert answer.status_code == 200
    errors = " ".join(answer.context["adminform"].form.errors["command_hosts"])
    assert "command_hosts[1]: '*' matches every host" in errors
    assert "command_hosts[2]: '127.0.0.1' is this machine" in errors
    policy.refresh_from_db()
    assert (policy.version, policy.command_hosts) == before


def test_a_rule_whose_hosts_add_an_address_is_refused_naming_it(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    rule = {
        "rules-TOTAL_FORMS": "1",
        "rules-0-position": "0",
        "rules-0-tool": "run_command",
        "rules-0-args": '{"command": "npm *"}',
        "rules-0-decision": "allow",
        "rules-0-reason": "",
        "rules-0-hosts": '{"add": ["169.254.169.254"]}',
    }
    form = policy_form(policy, command_hosts="npm registry.npmjs.org", **rule)
    answer = admin_client.post(f"/admin/tools_app/policy/{policy.pk}/change/", form)
    assert answer.status_code == 200
    assert b"rules[0].hosts.add[0]: &#x27;169.254.169.254&#x27; is this machine" in answer.content
    assert not PolicyRule.objects.exists()


# --- "Try a call": the dry-run service from the admin ------------------------------------


def try_url(policy: Policy) -> str:
    return f"/admin/tools_app/policy/{policy.pk}/try/"


def test_the_change_page_links_to_try_a_call(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    page = admin_client.get(f"/admin/tools_app/policy/{policy.pk}/change/")
    assert f'href="{try_url(policy)}"'.encode() in page.content


def test_trying_a_protected_write_shows_the_decision_reason_and_rule(
    admin_client: Client,
) -> None:
    policy = Policy.objects.get(name="default")
    args = '{"path": ".github/workflows/ci.yml", "content": "on: push\\n"}'
    page = admin_client.post(try_url(policy), {"tool": "write_file", "args": args})
    assert page.status_code == 200
    assert page.context["result"]["decision"] == "require_approval"
    assert page.context["result"]["rule"] == "builtin:protected-path"
    assert b"protected path .github/workflows/ci.yml" in page.content


def test_trying_a_call_that_a_rule_denies_names_the_rule(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    rule = PolicyRule.objects.create(
        policy=policy, tool="read_file", args={"path": "docs/**"}, decision="deny", reason="no"
    )
    page = admin_client.post(
        try_url(policy), {"tool": "read_file", "args": '{"path": "docs/a.md"}'}
    )
    assert page.context["result"]["decision"] == "deny"
    assert str(rule.pk) in page.context["result"]["rule"]


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("read_file", '{"path": ', "args"),
        ("read_file", '["README.md"]', "args"),
        ("no_such_tool", "{}", "tool"),
    ],
)
def test_bad_json_or_an_unknown_tool_is_a_form_error(
    admin_client: Client, tool: str, args: str, field: str
) -> None:
    policy = Policy.objects.get(name="default")
    page = admin_client.post(try_url(policy), {"tool": tool, "args": args})
    assert page.status_code == 200
    assert page.context["result"] is None
    assert field in page.context["form"].errors


def test_the_try_a_call_action_opens_the_page_for_one_policy(admin_client: Client) -> None:
    policy = Policy.objects.get(name="default")
    answer = admin_client.post(
        "/admin/tools_app/policy/", {"action": "try_a_call", "_selected_action": [policy.pk]}
    )
    assert answer.status_code == 302
    assert answer["Location"] == try_url(policy)


def test_try_a_call_on_a_missing_policy_is_404(admin_client: Client) -> None:
    assert admin_client.get("/admin/tools_app/policy/999999/try/").status_code == 404


def test_try_a_call_is_for_staff_only(client: Client) -> None:
    User.objects.create_user("rita", password="a-long-password")
    client.login(username="rita", password="a-long-password")
    policy = Policy.objects.get(name="default")
    answer = client.get(try_url(policy))
    assert answer.status_code == 302
    assert "/admin/login/" in answer["Location"]
