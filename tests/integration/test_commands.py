"""The management commands, run as a user would, against the database."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tools_app.models import AgentSession, ApiToken, Policy, ToolCall

pytestmark = pytest.mark.django_db


def run(*args: str) -> dict[str, object]:
    out = StringIO()
    call_command(*args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.postgres
def test_the_migration_creates_the_default_policy() -> None:
    policy = Policy.objects.get(name="default")
    assert policy.max_diff_lines == 500
    assert policy.require_approval_above == 200
    assert ".env" in policy.protected_paths
    assert "rm -rf /" in policy.blocked_commands


def test_evaluate_policy_requires_approval_for_npm_install(workspace: Path) -> None:
    answer = run(
        "evaluate_policy",
        "--workspace",
        str(workspace),
        "run_command",
        '{"command": "npm install lodash"}',
    )
    assert answer["decision"] == "require_approval"
    assert answer["rule"]
    assert "npm" in str(answer["reason"])


def test_evaluate_policy_allows_reads_and_denies_escapes(workspace: Path) -> None:
    read = run(
        "evaluate_policy", "--workspace", str(workspace), "read_file", '{"path": "README.md"}'
    )
    assert read["decision"] == "allow"
    escape = run(
        "evaluate_policy",
        "--workspace",
        str(workspace),
        "read_file",
        '{"path": "../../etc/passwd"}',
    )
    assert escape["decision"] == "deny"
    assert "outside the workspace" in str(escape["reason"])


def test_evaluate_policy_denies_bad_arguments_naming_them(workspace: Path) -> None:
    answer = run("evaluate_policy", "--workspace", str(workspace), "read_file", '{"offset": 2}')
    assert answer["decision"] == "deny"
    assert "path" in str(answer["reason"])


def test_evaluate_policy_refuses_bad_json_and_unknown_policy(workspace: Path) -> None:
    with pytest.raises(CommandError, match="ARGS_JSON is not valid JSON"):
        call_command("evaluate_policy", "--workspace", str(workspace), "read_file", "{nope")
    with pytest.raises(CommandError, match="no policy named 'strict'"):
        call_command(
            "evaluate_policy",
            "--policy",
            "strict",
            "--workspace",
            str(workspace),
            "read_file",
            '{"path": "README.md"}',
        )


def test_call_tool_reads_a_file_with_line_numbers(workspace: Path) -> None:
    answer = run(
        "call_tool", "--workspace", str(workspace), "read_file", '{"path": "README.md", "limit": 1}'
    )
    assert answer["status"] == "succeeded"
    assert answer["decision"] == "allow"
    assert str(answer["result"]).startswith("1 | # Title")
    call = ToolCall.objects.get()
    assert call.session.kind == AgentSession.Kind.CLI
    assert call.policy_version == 1


def test_call_tool_writes_a_file(workspace: Path) -> None:
    answer = run(
        "call_tool",
        "--workspace",
        str(workspace),
        "write_file",
        '{"path": "notes/todo.txt", "content": "one\\ntwo\\n"}',
    )
    assert answer["status"] == "succeeded"
    assert (workspace / "notes" / "todo.txt").read_text() == "one\ntwo\n"
    assert ToolCall.objects.get().changed_lines == 2


def test_call_tool_does_not_run_a_call_that_needs_approval(workspace: Path) -> None:
    before = (workspace / ".env").read_bytes()
    answer = run(
        "call_tool",
        "--workspace",
        str(workspace),
        "write_file",
        '{"path": ".env", "content": "SECRET=leaked\\n"}',
    )
    assert answer["status"] == "awaiting_approval"
    assert answer["decision"] == "require_approval"
    assert (workspace / ".env").read_bytes() == before
    call = ToolCall.objects.get()
    assert call.preview is not None
    assert "+SECRET=leaked" in call.preview["diff"]
    assert call.expires_at is not None


def test_call_tool_reports_a_denied_command_without_running_it(workspace: Path) -> None:
    answer = run(
        "call_tool",
        "--workspace",
        str(workspace),
        "run_command",
        '{"command": "rm -fr / --no-preserve-root"}',
    )
    assert answer["status"] == "denied"
    assert answer["decision"] == "deny"
    assert answer["result"] == answer["reason"]


def test_call_tool_reports_validation_errors_as_failed(workspace: Path) -> None:
    answer = run(
        "call_tool",
        "--workspace",
        str(workspace),
        "edit_file",
        '{"path": "README.md", "old_string": "absent text", "new_string": "x"}',
    )
    assert answer["status"] == "failed"
    assert "old_string" in str(answer["result"])
    unknown = run("call_tool", "--workspace", str(workspace), "format_disk", "{}")
    assert unknown["status"] == "failed"
    assert "Unknown tool" in str(unknown["result"])


def test_call_tool_needs_an_existing_workspace(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="is not a directory"):
        call_command("call_tool", "--workspace", str(tmp_path / "missing"), "list_files", "{}")


def test_export_then_import_round_trips_a_policy(tmp_path: Path) -> None:
    out = StringIO()
    call_command("export_policy", "default", stdout=out)
    exported = json.loads(out.getvalue())
    exported["name"] = "strict"
    exported["max_diff_lines"] = 100
    exported["rules"] = [
        {
            "tool": "run_command",
            "args": {"command": "make *"},
            "decision": "allow",
            "reason": "builds",
        }
    ]
    file = tmp_path / "strict.json"
    file.write_text(json.dumps(exported))
    call_command("import_policy", str(file), stdout=StringIO())
    again = StringIO()
    call_command("export_policy", "strict", stdout=again)
    assert json.loads(again.getvalue()) == exported


def test_importing_an_existing_name_replaces_it_and_bumps_the_version(tmp_path: Path) -> None:
    file = tmp_path / "p.json"
    file.write_text(
        json.dumps(
            {
                "name": "team",
                "rules": [{"tool": "read_file", "args": {}, "decision": "deny", "reason": "no"}],
            }
        )
    )
    call_command("import_policy", str(file), stdout=StringIO())
    file.write_text(json.dumps({"name": "team", "max_diff_lines": 42}))
    call_command("import_policy", str(file), stdout=StringIO())
    policy = Policy.objects.get(name="team")
    assert policy.max_diff_lines == 42
    assert policy.rules.count() == 0
    assert policy.version == 2


def test_import_refuses_an_invalid_policy_naming_the_field(tmp_path: Path) -> None:
    file = tmp_path / "bad.json"
    file.write_text(
        json.dumps(
            {
                "name": "bad",
                "rules": [
                    {
                        "tool": "read_file",
                        "args": {"path": "re:("},
                        "decision": "allow",
                        "reason": "",
                    },
                    {"tool": "read_file", "args": {}, "decision": "maybe", "reason": ""},
                ],
            }
        )
    )
    with pytest.raises(CommandError) as error:
        call_command("import_policy", str(file), stdout=StringIO())
    assert "rules[0].args.path" in str(error.value)
    assert "rules[1].decision" in str(error.value)
    assert not Policy.objects.filter(name="bad").exists()


def test_import_refuses_unreadable_and_non_json_files(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_policy", str(tmp_path / "none.json"))
    file = tmp_path / "x.json"
    file.write_text("[1, 2]")
    with pytest.raises(CommandError, match="one JSON object"):
        call_command("import_policy", str(file))


def test_call_tool_denies_a_write_into_git_and_changes_nothing(workspace: Path) -> None:
    config = workspace / ".git" / "config"
    before = config.read_bytes()
    answer = run(
        "call_tool", "--workspace", str(workspace), "write_file",
        '{"path": ".git/config", "content": "[core]\\n"}',
    )  # fmt: skip
    assert answer["status"] == "denied"
    assert ".git" in str(answer["reason"])
    assert config.read_bytes() == before


def test_call_tool_denies_a_path_through_a_symlink_out_of_the_workspace(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (workspace / "link").symlink_to(outside)
    answer = run(
        "call_tool", "--workspace", str(workspace), "write_file",
        '{"path": "link", "content": "overwritten\\n"}',
    )  # fmt: skip
    assert answer["status"] == "denied"
    assert outside.read_text() == "keep\n"


@pytest.mark.postgres
def test_the_migrations_create_the_reviewers_group() -> None:
    from django.contrib.auth.models import Group

    assert Group.objects.filter(name="reviewers").exists()


def test_create_api_token_prints_a_working_token_alone_on_the_last_line() -> None:
    from django.contrib.auth.models import User
    from django.test import Client

    User.objects.create_user("alice")
    out = StringIO()
    call_command("create_api_token", "alice", "--scope", "agent", stdout=out, stderr=StringIO())
    token = out.getvalue().strip().splitlines()[-1]
    assert token.startswith("aw_") and " " not in token
    answer = Client().get("/api/sessions", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200
    assert ApiToken.objects.get().token_hash != token
    wrong = Client().get("/api/sessions", headers={"Authorization": "Bearer aw_nope"})
    assert wrong.status_code == 401


def test_create_api_token_refuses_an_unknown_user_and_scope() -> None:
    with pytest.raises(CommandError, match="no user named 'ghost'"):
        call_command("create_api_token", "ghost")
    with pytest.raises(CommandError):
        call_command("create_api_token", "ghost", "--scope", "admin")
