"""What a reviewer approves is what runs: the attacks of issue 11, through the REST API
with a real worker, judged by the workspace and git afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import git
from tests.integration.helpers import Api, call, start_session, wait_final
from tools_app.models import PullRequest

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.eager,
]


def lines(count: int, word: str = "line") -> str:
    return "".join(f"{word} {n}\n" for n in range(count))


def approve(api: Api, waiting: dict[str, Any]) -> dict[str, Any]:
    assert waiting["status"] == "awaiting_approval", waiting
    answer = api.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"})
    assert answer.status_code == 200, answer.content
    return wait_final(api, waiting["id"])


def test_a_commit_records_only_what_its_preview_showed(
    alice: Api, rita: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    ws = session["workspace"]
    big = call(alice, session, "write_file", wait=0.01, path="big.txt", content=lines(240))
    assert approve(rita, big)["status"] == "succeeded"
    commit = call(alice, session, "git_commit", wait=0.01, message="add big")
    assert commit["status"] == "awaiting_approval"
    assert commit["preview"]["files"] == ["big.txt"]
    sneaky = call(alice, session, "write_file", path="sneaky.py", content="import os\n")
    assert sneaky["status"] == "succeeded"

    assert approve(rita, commit)["status"] == "succeeded"
    assert git(ws, "show", "--name-only", "--format=", "HEAD").split() == ["big.txt"]
    assert Path(ws, "sneaky.py").read_text() == "import os\n"
    assert git(ws, "status", "--porcelain").split() == ["??", "sneaky.py"]


def test_a_pull_request_never_pushes_a_head_nobody_reviewed(
    alice: Api, rita: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    ws = session["workspace"]
    assert call(alice, session, "git_branch", action="create", name="feature/x")["status"] == (
        "succeeded"
    )
    call(alice, session, "write_file", path="feature.py", content="x = 1\n")
    assert call(alice, session, "git_commit", message="feature")["status"] == "succeeded"
    proposal = call(alice, session, "create_pull_request", wait=0.01, title="Feature X")
    assert proposal["status"] == "awaiting_approval"
    previewed = proposal["preview"]["state"]["head_commit"]
    call(alice, session, "write_file", path="later.py", content="y = 2\n")
    assert call(alice, session, "git_commit", message="unreviewed")["status"] == "succeeded"

    done = approve(rita, proposal)
    assert done["status"] == "failed"
    assert "changed since this pull request was previewed" in done["result"]
    assert git(workspace, "branch", "--list", "feature/x") == ""  # nothing pushed
    assert not PullRequest.objects.exists()
    assert git(ws, "rev-parse", "HEAD").strip() != previewed


def test_an_approved_pull_request_pushes_exactly_the_previewed_head(
    alice: Api, rita: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    call(alice, session, "git_branch", action="create", name="feature/y")
    call(alice, session, "write_file", path="feature.py", content="x = 1\n")
    call(alice, session, "git_commit", message="feature")
    proposal = call(alice, session, "create_pull_request", wait=0.01, title="Feature Y")
    assert approve(rita, proposal)["status"] == "succeeded"
    pushed = git(workspace, "rev-parse", "refs/heads/feature/y").strip()
    assert pushed == proposal["preview"]["state"]["head_commit"]


def test_an_approved_write_never_undoes_a_later_edit(
    alice: Api, rita: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    ws = session["workspace"]
    assert call(alice, session, "write_file", path="big.txt", content="first\n")["status"] == (
        "succeeded"
    )
    write = call(alice, session, "write_file", wait=0.01, path="big.txt", content=lines(240))
    assert write["status"] == "awaiting_approval"
    edit = call(alice, session, "edit_file", path="big.txt", old_string="first", new_string="1st")
    assert edit["status"] == "succeeded"

    done = approve(rita, write)
    assert done["status"] == "failed"
    assert "changed since this call was previewed" in done["result"]
    assert Path(ws, "big.txt").read_text() == "1st\n"


def test_an_approved_write_runs_when_nothing_changed(
    alice: Api, rita: Api, workspace: Path
) -> None:
    session = start_session(alice, workspace)
    write = call(alice, session, "write_file", wait=0.01, path="big.txt", content=lines(240))
    assert approve(rita, write)["status"] == "succeeded"
    assert Path(session["workspace"], "big.txt").read_text() == lines(240)


def test_reading_a_secret_waits_for_a_person(alice: Api, rita: Api, workspace: Path) -> None:
    session = start_session(alice, workspace)
    read = call(alice, session, "read_file", wait=0.01, path=".env")
    assert (read["status"], read["rule"]) == ("awaiting_approval", "builtin:secret-path")
    assert "shh" not in str(read)
    search = call(alice, session, "search_codebase", pattern="SECRET", include="**/.env*")
    assert search["status"] == "succeeded"
    assert "shh" not in search["result"]
    assert "SECRET=shh" in approve(rita, read)["result"]
