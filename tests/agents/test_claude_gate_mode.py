"""Gate mode with the real Claude Code: what it passes unseen is narrowed on the disk.

Alice's Claude Code works in a git project that tracks a `.env` (changed since), beside
`src/app.py`. `git diff` shows every tracked change: agentweb lets it run with no
person, narrowed, and the secret never reaches the model (checked in what the fake
Anthropic API received). (Claude Code 2.1.332 has no Grep tool of its own: it greps
through Bash; the Grep narrowing is tested at the hook, tests/integration.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.agents.claude import finished, needs_claude, run_claude
from tests.agents.fake_anthropic import FakeAnthropic
from tools_app.models import ToolCall

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), needs_claude]

SECRET = "sk-live-GATE-4471"


@pytest.fixture
def repo(project: Path) -> Path:
    (project / ".env").write_text(f"API_KEY={SECRET}\n")
    (project / "src").mkdir()
    (project / "src/app.py").write_text("API_KEY = 'from the environment'\n")
    git = ["git", "-C", str(project), "-c", "user.name=a", "-c", "user.email=a@b"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    (project / ".env").write_text(f"API_KEY={SECRET}-rotated\n")
    (project / "src/app.py").write_text("API_KEY = 'still from the environment'\n")
    return project


def test_git_diff_runs_unseen_narrowed_and_never_shows_the_secret(
    agentweb: str, token: str, repo: Path
) -> None:
    with FakeAnthropic("Bash", {"command": "git diff", "description": "diff"}) as fake:
        finished(run_claude(repo, agentweb, token, fake))
        results = " ".join(fake.tool_results())
    assert "still from the environment" in results
    assert SECRET not in results
    call = ToolCall.objects.get()
    assert (call.status, call.rule) == ("succeeded", "gateway:proven")
    ran = call.native_input["command"]
    assert ran.startswith("GIT_CEILING_DIRECTORIES=") and " git --no-pager " in ran, ran
    assert " -c safe.bareRepository=explicit -c core.fsmonitor=false " in ran, ran
    assert " diff --no-ext-diff --no-textconv --submodule=short ':(top,exclude,icase,glob)" in ran


def test_a_proven_read_runs_unseen_and_a_link_stops_it(
    agentweb: str, token: str, repo: Path
) -> None:
    """Claude Code runs the command with agentweb's disk check in front: a plain file is
    read; a link is not followed (this one leads to a plain file, so that only the check,
    on the agent's machine, can stop it), and the model reads why."""
    with FakeAnthropic("Bash", {"command": "cat src/app.py", "description": "read"}) as fake:
        finished(run_claude(repo, agentweb, token, fake))
        assert "still from the environment" in " ".join(fake.tool_results())
    (repo / "notes.txt").symlink_to("src/app.py")
    with FakeAnthropic("Bash", {"command": "cat notes.txt", "description": "read"}) as fake:
        finished(run_claude(repo, agentweb, token, fake))
        results = " ".join(fake.tool_results())
    assert "notes.txt is a symbolic link or a special file" in results, results
    assert "from the environment" not in results
    assert [c.rule for c in ToolCall.objects.order_by("pk")] == ["gateway:proven"] * 2
