"""`POST /api/hooks/claude-code`: every answer is a 200 with a decision Claude Code obeys.

Alice's Claude Code sends its hook events with her agent token; Rita decides what waits.
Most tests set AGENTWEB_HOOK_WAIT_SECONDS to 0, so a call that needs a person is answered
"still awaiting approval" at once and the retry finds the decision.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.integration.gateway_helpers import CWD, URL, Hook, denial
from tests.integration.helpers import Api
from tools_app import services
from tools_app.models import AgentSession, Policy, PolicyRule, ToolCall
from tools_app.services import gateway

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_hook_wait")]


# --- bad input: always a deny that names the problem -----------------------------------


def test_it_denies_without_a_token(claude: Hook) -> None:
    assert "no bearer token" in denial(claude.send({"hook_event_name": "Stop"}, token=""))


def test_it_denies_a_bad_token_and_a_review_token(claude: Hook, reviewer: User) -> None:
    assert "not valid" in denial(claude.send({}, token="aw_not-a-token"))
    review = services.api_token_create(user=reviewer, scope="review")
    assert "use an `agent` token" in denial(claude.send({}, token=review))


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b"{not json", "the event is not valid JSON"),
        (b"\xff\xfe", "not valid UTF-8"),
        ("[1, 2]", "must be a JSON object, not list"),
        ({"hook_event_name": 3}, "`hook_event_name` is missing or not a string"),
        ({"hook_event_name": "Launch"}, "unknown hook_event_name 'Launch'"),
        ('{"hook_event_name": "PreToolUse", "x": "\\ud800"}', "`x` contains a lone surrogate"),
        ('{"hook_event_name": "PreToolUse", "x": "a\\u0000b"}', "`x` contains a NUL byte"),
    ],
)
def test_it_denies_a_malformed_event_naming_what_is_wrong(
    claude: Hook, body: object, named: str
) -> None:
    assert named in denial(claude.send(body))
    assert not ToolCall.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("tool_input", ["ls"], "`tool_input` must be a JSON object"),
        ("tool_input", {"command": "ls\x00"}, "`tool_input.command` contains a NUL byte"),
        ("tool_input", {"command": "ls \udc80"}, "`tool_input.command` contains a lone surrogate"),
        ("session_id", 42, "`session_id` must be a non-empty string"),
        ("tool_use_id", "", "`tool_use_id` must be a non-empty string"),
        ("tool_name", "x" * 500, "`tool_name` must be a non-empty string of at most 200"),
        ("cwd", "relative/dir", "`cwd` must be an absolute path"),
        ("agent_id", ["a"], "`agent_id` must be a non-empty string"),
    ],
)
def test_it_denies_wrong_types_naming_the_field(
    claude: Hook, field: str, value: Any, named: str
) -> None:
    event = {
        "session_id": "s",
        "cwd": CWD,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
        field: value,
    }
    body = json.dumps(event)  # lone surrogates are escaped by json.dumps, as a client sends
    assert named in denial(claude.send(body))
    assert not AgentSession.objects.exists()


def test_a_body_over_the_limit_is_a_deny_not_a_413(claude: Hook, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
    event = {"hook_event_name": "PreToolUse", "tool_input": {"content": "x" * 5000}}
    assert "larger than 2000 bytes" in denial(claude.send(event))


def test_a_huge_tool_input_is_judged_not_crashed_on(claude: Hook) -> None:
    answer = claude.pre("Write", {"file_path": f"{CWD}/big.txt", "content": "line\n" * 200_000})
    assert answer["permissionDecision"] == "deny"
    assert "over the limit of 500 (max_diff_lines)" in answer["permissionDecisionReason"]


def test_events_it_has_no_use_for_get_an_empty_answer(claude: Hook) -> None:
    assert claude.send({"hook_event_name": "Stop", "session_id": "s"}) == {}
    assert claude.send({"hook_event_name": "Notification", "message": "hi"}) == {}


def test_a_wrong_method_is_not_a_decision(claude: Hook) -> None:
    assert claude.client.get(URL).status_code == 405


# --- sessions and calls -----------------------------------------------------------------


def test_an_allowed_ls_is_recorded_and_finished_by_post_tool_use(
    claude: Hook, creator: User
) -> None:
    answer = claude.pre("Bash", {"command": "ls -la", "description": "list"})
    assert answer["permissionDecision"] == "allow"
    assert answer["updatedInput"] == {"command": "ls -la", "description": "list"}
    call = ToolCall.objects.get()
    assert (call.tool, call.args, call.status) == ("run_command", {"command": "ls -la"}, "running")
    response = {"stdout": "README.md\n", "stderr": "", "interrupted": False}
    assert (
        claude.event(
            "PostToolUse",
            "Bash",
            {"command": "ls -la", "description": "list"},
            tool_use_id="toolu_1",
            tool_response=response,
        )
        == {}
    )
    alice = Api(claude.token)
    session = alice.get("/sessions").json()["items"][0]
    assert (session["kind"], session["cwd"], session["external_id"]) == (
        "gateway",
        CWD,
        "cc-session-1",
    )
    [shown] = alice.get(f"/sessions/{session['id']}/tool-calls").json()["items"]
    assert (shown["status"], shown["result"]) == ("succeeded", "README.md")
    assert (shown["native_tool"], shown["tool_use_id"]) == ("Bash", "toolu_1")
    assert shown["native_input"] == {"command": "ls -la", "description": "list"}


def test_a_dangerous_command_is_denied_with_the_reason(claude: Hook) -> None:
    reason = denial(claude.event("PreToolUse", "Bash", {"command": "chmod -R 777 /"}))
    assert "agentweb denied this Bash" in reason and "never run" in reason
    assert ToolCall.objects.get().status == "denied"


def test_a_resent_event_finds_the_same_call(claude: Hook) -> None:
    """The session has no call to join, so its calls are not read: the re-sent call's
    insert meets the unique key of its tool use, and nothing more is stored."""
    first = claude.pre("Bash", {"command": "ls"}, tool_use_id="toolu_same")
    session = AgentSession.objects.get()
    again = claude.pre("Bash", {"command": "ls"}, tool_use_id="toolu_same")
    assert first == again and first["permissionDecision"] == "allow"
    assert ToolCall.objects.count() == 1
    assert AgentSession.objects.get().last_event_seq == session.last_event_seq


def test_a_resent_event_of_a_waiting_call_finds_it_among_the_calls_to_join(
    claude: Hook,
) -> None:
    first = claude.pre("Bash", {"command": "npm install"}, tool_use_id="toolu_same")
    session = AgentSession.objects.get()
    again = claude.pre("Bash", {"command": "npm install"}, tool_use_id="toolu_same")
    assert first == again and "still awaiting approval" in first["permissionDecisionReason"]
    assert list(ToolCall.objects.values_list("tool_use_id", "status")) == [
        ("toolu_same", "awaiting_approval")
    ]
    assert AgentSession.objects.get().last_event_seq == session.last_event_seq


def test_a_sub_agent_works_in_a_child_session(claude: Hook) -> None:
    claude.pre("Bash", {"command": "ls"})
    claude.pre("Bash", {"command": "pwd"}, agent_id="agent-7", agent_type="Explore")
    parent = AgentSession.objects.get(parent=None)
    child = AgentSession.objects.get(parent=parent)
    assert (child.external_id, child.kind, child.depth) == ("cc-session-1/agent-7", "gateway", 1)
    assert child.tool_calls.get().args == {"command": "pwd"}


def test_a_post_tool_use_finishes_its_own_call_only_a_sub_agents_in_its_child_session(
    claude: Hook,
) -> None:
    """A PostToolUse finds its call with its session in one read (`gateway_call_report`):
    the sub-agent's in its child session, and never another user's call of the same
    session and tool-use ids."""
    ran = {"tool_response": {"stdout": "done\n", "stderr": "", "interrupted": False}}
    claude.pre("Bash", {"command": "ls"}, tool_use_id="toolu_a")
    claude.pre("Bash", {"command": "pwd"}, agent_id="agent-7", tool_use_id="toolu_b")
    bob = Hook(services.api_token_create(user=User.objects.create_user("bob"), scope="agent"))
    assert bob.event("PostToolUse", "Bash", {"command": "ls"}, tool_use_id="toolu_a", **ran) == {}
    assert ToolCall.objects.get(tool_use_id="toolu_a").status == "running"  # not Bob's
    claude.event("PostToolUse", "Bash", {"command": "pwd"}, agent_id="agent-7",
                 tool_use_id="toolu_b", **ran)  # fmt: skip
    claude.event("PostToolUse", "Bash", {"command": "ls"}, tool_use_id="toolu_a", **ran)
    done = {c.tool_use_id: (c.status, c.result, c.session.external_id) for c in
            ToolCall.objects.filter(session__creator__username="alice")}  # fmt: skip
    assert done == {
        "toolu_a": ("succeeded", "done", "cc-session-1"),
        "toolu_b": ("succeeded", "done", "cc-session-1/agent-7"),
    }


def test_a_session_started_by_two_events_at_once_is_one_session(
    claude: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second event's lookup missed the session the first was storing: its insert
    stores nothing, and its call joins the first event's session, which has one
    `session.created` event."""
    claude.pre("Bash", {"command": "ls"})
    missed = iter([None])
    find = gateway._session_find
    monkeypatch.setattr(gateway, "_session_find", lambda *a: next(missed, None) or find(*a))
    assert claude.pre("Bash", {"command": "pwd"})["permissionDecision"] == "allow"
    session = AgentSession.objects.get()
    assert sorted(session.tool_calls.values_list("args__command", flat=True)) == ["ls", "pwd"]
    assert session.events.filter(type="session.created").count() == 1


def test_a_sessions_first_event_sent_twice_at_once_is_one_call(
    claude: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new session's first hook looks for no calls; the same event sent again at once
    read the session before the first stored its call, so it looks for none either: its
    insert meets the unique key and it answers with the first event's call."""
    first = claude.pre("Bash", {"command": "npm install"}, tool_use_id="toolu_twice")
    find = gateway._session_find

    def read_before_the_call(*args: Any) -> Any:
        found = find(*args)
        assert found is not None and found.joinable_calls  # the first call waits
        found.joinable_calls = False  # as read before the first event's call
        return found

    monkeypatch.setattr(gateway, "_session_find", read_before_the_call)
    again = claude.pre("Bash", {"command": "npm install"}, tool_use_id="toolu_twice")
    assert again == first
    session = AgentSession.objects.get()
    assert list(session.tool_calls.values_list("tool_use_id", flat=True)) == ["toolu_twice"]
    assert session.events.filter(type="tool_call.received").count() == 1


def test_each_user_has_their_own_session_for_the_same_id(claude: Hook, outsider: User) -> None:
    claude.pre("Bash", {"command": "ls"})
    other = Hook(services.api_token_create(user=outsider, scope="agent"))
    other.pre("Bash", {"command": "ls"})
    assert AgentSession.objects.filter(external_id="cc-session-1").count() == 2


# --- waiting, deciding, retrying --------------------------------------------------------


def test_a_write_of_env_waits_then_the_retry_gets_the_approval(
    claude: Hook, reviewer: User
) -> None:
    write = {"file_path": f"{CWD}/.env", "content": "KEY=1\n"}
    reason = denial({"hookSpecificOutput": claude.pre("Write", write)})
    call = ToolCall.objects.get()
    assert f"still awaiting approval (call {call.pk}, " in reason
    assert "send the same call again to keep waiting" in reason
    assert call.preview["diff"].endswith("+KEY=1\n")
    services.tool_call_decide(call=call, user=reviewer, scope="session", decision="approve")
    retry = claude.pre("Write", write)  # a new tool_use_id, the same input
    assert retry["permissionDecision"] == "allow"
    assert retry["updatedInput"] == write
    assert "approved in agentweb by rita" in retry["permissionDecisionReason"]
    call.refresh_from_db()
    assert (ToolCall.objects.count(), call.tool_use_id, call.status) == (1, "toolu_2", "running")


def test_a_retry_while_still_waiting_joins_the_call(claude: Hook) -> None:
    claude.pre("Bash", {"command": "npm install"})
    claude.pre("Bash", {"command": "npm install"})
    assert ToolCall.objects.count() == 1
    claude.pre("Bash", {"command": "npm install left-pad"})
    assert ToolCall.objects.count() == 2


def test_edit_then_approve_runs_the_edited_command(claude: Hook, reviewer: User) -> None:
    claude.pre("Bash", {"command": "rm -r build", "description": "clean"})
    call = ToolCall.objects.get()
    rita = Api(services.api_token_create(user=reviewer, scope="review"))
    edited = {"command": "rm -r build/cache", "description": "clean"}
    answer = rita.post(f"/tool-calls/{call.pk}/decision", {"decision": "approve", "args": edited})
    assert answer.status_code == 200, answer.content
    assert answer.json()["native_input"] == edited
    assert answer.json()["args"] == {"command": "rm -r build/cache"}
    retry = claude.pre("Bash", {"command": "rm -r build", "description": "clean"})
    assert retry["permissionDecision"] == "allow"
    assert retry["updatedInput"] == edited


def test_an_edit_the_policy_denies_denies_the_call(claude: Hook, reviewer: User) -> None:
    claude.pre("Bash", {"command": "rm -r build"})
    call = ToolCall.objects.get()
    decided = services.tool_call_decide(
        call=call, user=reviewer, scope="review", decision="approve",
        args={"command": "chmod -R 777 /"},
    )  # fmt: skip
    assert decided.status == "denied"
    assert "denied by the policy" in denial(
        {"hookSpecificOutput": claude.pre("Bash", {"command": "rm -r build"})}
    )


def test_a_denial_reaches_the_model_with_the_reviewers_reason(claude: Hook, reviewer: User) -> None:
    claude.pre("Bash", {"command": "git push --force"})
    call = ToolCall.objects.get()
    services.tool_call_decide(
        call=call, user=reviewer, scope="review", decision="deny", reason="not on main"
    )
    reason = denial({"hookSpecificOutput": claude.pre("Bash", {"command": "git push --force"})})
    assert "Denied by a reviewer: not on main" in reason
    # answered: the next identical call is a new request for a person
    claude.pre("Bash", {"command": "git push --force"})
    assert ToolCall.objects.count() == 2


def test_post_tool_use_records_the_real_patch_and_flags_a_changed_input(claude: Hook) -> None:
    edit = {"file_path": f"{CWD}/src/app.py", "old_string": "a = 1", "new_string": "a = 2"}
    assert claude.pre("Edit", edit)["permissionDecision"] == "allow"
    patch = [{"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 1,
              "lines": ["-a = 1", "+a = 3"]}]  # fmt: skip
    ran = {**edit, "new_string": "a = 3"}
    response = {"filePath": edit["file_path"], "structuredPatch": patch, "originalFile": "a = 1"}
    claude.event("PostToolUse", "Edit", ran, tool_use_id="toolu_1", tool_response=response)
    call = ToolCall.objects.get()
    assert call.status == "succeeded"
    assert call.preview["ran"]["diff"].splitlines()[2:] == ["@@ -3,1 +3,1 @@", "-a = 1", "+a = 3"]
    assert call.preview["ran"]["input"] == ran
    assert call.result.startswith("Warning: the input that ran differs")


def test_post_tool_use_failure_fails_the_call(claude: Hook) -> None:
    answer = claude.pre("Bash", {"command": "ls nowhere"})
    ran = answer["updatedInput"]  # as Claude Code reports it: what it was told to run
    assert ran["command"].endswith("then ls nowhere\nelse false; fi; }"), ran
    claude.event(
        "PostToolUseFailure", "Bash", ran, tool_use_id="toolu_1",
        error="ls: cannot access 'nowhere'",
    )  # fmt: skip
    call = ToolCall.objects.get()
    assert (call.status, call.result) == ("failed", "ls: cannot access 'nowhere'")


def test_a_cancelled_session_denies_its_waiting_call(claude: Hook) -> None:
    claude.pre("Bash", {"command": "make deploy"})
    services.session_cancel(session=AgentSession.objects.get())
    reason = denial({"hookSpecificOutput": claude.pre("Bash", {"command": "make deploy"})})
    assert "was cancelled" in reason


# --- what the real Codex and Gemini CLIs send (tests/agents drives them) ---------------


def test_an_after_event_without_the_before_events_id_finds_its_call_by_input(
    claude: Hook,
) -> None:
    """Gemini CLI gives no tool-use id: agentweb-hook names the AfterTool otherwise,
    and agentweb takes the session's running call of that tool on that input."""
    claude.pre("run_shell_command", {"command": "ls"}, tool_use_id="gemini-before-1")
    claude.pre("run_shell_command", {"command": "pwd"}, tool_use_id="gemini-before-2")
    after = {"tool_use_id": "gemini-after-x", "tool_response": "README.md\n"}
    assert claude.event("PostToolUse", "run_shell_command", {"command": "pwd"}, **after) == {}
    by_id = {c.tool_use_id: c for c in ToolCall.objects.all()}
    assert (by_id["gemini-before-2"].status, by_id["gemini-before-2"].result) == (
        "succeeded",
        "README.md\n",
    )
    assert by_id["gemini-before-1"].status == "running"


def test_a_command_is_judged_in_the_directory_the_event_names(claude: Hook) -> None:
    """The session keeps its first cwd; a later event's cwd (Codex's `workdir`, Claude
    Code's `cd`) is where that command runs, and what the reviewer sees."""
    claude.pre("Bash", {"command": "ls"})
    answer = claude.pre("Bash", {"command": "rm -rf build"}, cwd="/srv/other")
    assert "still awaiting approval" in answer["permissionDecisionReason"]
    call = ToolCall.objects.get(native_input={"command": "rm -rf build"})
    assert call.args == {"command": "cd /srv/other && rm -rf build"}
    assert call.session.cwd == CWD


# --- the policy of a gateway session ----------------------------------------------------


def test_the_hook_urls_policy_governs_the_sessions_it_starts(claude: Hook) -> None:
    strict = Policy.objects.create(name="strict")
    PolicyRule.objects.create(
        policy=strict, tool="run_command", decision="deny", reason="no commands here"
    )
    claude.url = f"{URL}?policy=strict"
    assert "no commands here" in denial(claude.event("PreToolUse", "Bash", {"command": "ls"}))
    session = AgentSession.objects.get(external_id="cc-session-1")
    assert session.policy == strict
    # The session keeps its policy: a later event naming another changes nothing.
    claude.url = f"{URL}?policy=default"
    assert "no commands here" in denial(claude.event("PreToolUse", "Bash", {"command": "ls"}))
    assert AgentSession.objects.get(pk=session.pk).policy == strict


def test_an_unknown_policy_is_a_deny_naming_it_and_starts_nothing(claude: Hook) -> None:
    claude.url = f"{URL}?policy=nope"
    reason = denial(claude.event("PreToolUse", "Bash", {"command": "ls"}))
    assert "There is no policy named 'nope'. (the hook URL's `policy`)" in reason
    assert not AgentSession.objects.filter(kind="gateway").exists()
    assert not ToolCall.objects.exists()


@pytest.mark.parametrize("policy", ["a%00b", "p" * 101])
def test_a_policy_that_cannot_be_a_name_is_a_deny_and_starts_nothing(
    claude: Hook, policy: str
) -> None:
    claude.url = f"{URL}?policy={policy}"
    reason = denial(claude.event("PreToolUse", "Bash", {"command": "ls"}))
    assert "the hook URL's `policy` must be a policy's name" in reason
    assert not AgentSession.objects.filter(kind="gateway").exists()


def test_hook_settings_names_an_existing_policy_and_refuses_an_unknown_one() -> None:
    out = io.StringIO()
    options = ["--url", "http://a:1", "--policy", "default"]
    call_command("hook_settings", "claude-code", *options, stdout=out)
    [hook_entry] = json.loads(out.getvalue())["hooks"]["PreToolUse"][0]["hooks"]
    assert hook_entry["url"] == "http://a:1/api/hooks/claude-code?policy=default"
    with pytest.raises(CommandError, match="There is no policy named 'nope' \\(known: default"):
        call_command("hook_settings", "codex", "--policy", "nope", stdout=io.StringIO())


def test_hook_settings_prints_command_hooks_for_a_private_address() -> None:
    """Claude Code refuses http hooks to a private address: a team server there is
    reached through agentweb-hook, chosen for a private IP and by `--hook command`."""

    def printed(*options: str) -> dict[str, Any]:
        out = io.StringIO()
        call_command("hook_settings", "claude-code", *options, stdout=out)
        return json.loads(out.getvalue())["hooks"]["PreToolUse"][0]["hooks"][0]  # type: ignore[no-any-return]

    assert printed("--url", "http://10.1.2.3:8000")["type"] == "command"
    assert printed("--url", "http://10.1.2.3:8000", "--hook", "http")["type"] == "http"
    assert printed("--url", "http://agentweb.internal", "--hook", "command")["type"] == "command"
    assert printed("--url", "https://agentweb.example.com")["type"] == "http"
    with pytest.raises(CommandError, match="--hook is for claude-code"):
        call_command("hook_settings", "codex", "--hook", "command", stdout=io.StringIO())
