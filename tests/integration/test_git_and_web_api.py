"""Git tools, a pull request's approval round trip and web_fetch, through the API and a
real worker: what an external agent does on a repository with no forge."""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

from tests.helpers import git
from tests.integration.helpers import Api, call, start_session, wait_final
from tools_app.models import Policy, PullRequest

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.eager,
]


@pytest.fixture
def origin(workspace: Path, tmp_path: Path) -> Path:
    """A bare repository: the remote that sessions clone and push to."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(workspace), str(bare))
    return bare


def test_a_pull_request_is_previewed_approved_pushed_and_recorded(
    alice: Api, rita: Api, origin: Path
) -> None:
    session = start_session(alice, origin)
    assert (
        call(alice, session, "git_branch", action="create", name="fix-greeting")["status"]
        == "succeeded"
    )
    edit = call(alice, session, "edit_file", path="src/app.py", old_string="hello", new_string="hi")
    assert edit["status"] == "succeeded"
    status = call(alice, session, "git_status")
    assert "src/app.py" in status["result"]
    commit = call(alice, session, "git_commit", message="Shorter greeting")
    assert commit["status"] == "succeeded", commit["result"]
    log = call(alice, session, "git_log", count=1)
    assert "Shorter greeting" in log["result"]

    waiting = call(
        alice,
        session,
        "create_pull_request",
        wait=0.01,
        title="Shorter greeting",
        body="Why: brevity",
    )
    assert waiting["status"] == "awaiting_approval"
    preview = waiting["preview"]
    assert (preview["base"], preview["head"]) == ("main", "fix-greeting")
    assert [c["subject"] for c in preview["commits"]] == ["Shorter greeting"]
    assert "+    return f'hi {name}'" in preview["diff"]

    rita.post(f"/tool-calls/{waiting['id']}/decision", {"decision": "approve"})
    done = wait_final(alice, waiting["id"])
    assert done["status"] == "succeeded", done["result"]
    assert re.search(r"Pull request #1: http://\S+/pulls/\d+/", done["result"])
    assert git(origin, "rev-parse", "fix-greeting").strip()
    pull = PullRequest.objects.get()
    assert (pull.number, pull.head, pull.base) == (1, "fix-greeting", "main")

    browser = Client()
    browser.login(username="rita", password="a-long-password")
    page = browser.get(f"/pulls/{pull.pk}/")
    assert page.status_code == 200
    assert b"Shorter greeting" in page.content
    assert b"Approvals" in page.content


def test_a_commit_above_the_threshold_waits_with_its_exact_diff(alice: Api, origin: Path) -> None:
    Policy.objects.filter(name="default").update(require_approval_above=3, max_diff_lines=1000)
    session = start_session(alice, origin)
    Path(session["workspace"], "notes.txt").write_text("".join(f"line {n}\n" for n in range(10)))
    waiting = call(alice, session, "git_commit", wait=0.01, message="Add notes")
    assert waiting["status"] == "awaiting_approval"
    assert waiting["rule"] == "builtin:require-approval-above"
    assert "+line 9" in waiting["preview"]["diff"]
    assert waiting["preview"]["changed_lines"] == 10


class Hits(http.server.BaseHTTPRequestHandler):
    count = 0

    def do_GET(self) -> None:
        type(self).count += 1
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[str]:
    Hits.count = 0
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hits)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/data"
    server.shutdown()


def test_web_fetch_of_a_private_address_is_denied_without_contact(
    alice: Api, origin: Path, local_server: str
) -> None:
    session = start_session(alice, origin)
    answer = call(alice, session, "web_fetch", url=local_server)
    assert answer["status"] == "denied"
    assert "loopback" in answer["reason"]
    assert Hits.count == 0


def test_web_fetch_reaches_a_host_the_policy_allows(
    alice: Api, origin: Path, local_server: str
) -> None:
    Policy.objects.filter(name="default").update(web_allow_hosts=["127.0.0.1"])
    session = start_session(alice, origin)
    answer = call(alice, session, "web_fetch", url=local_server)
    assert answer["status"] == "succeeded", answer["result"]
    assert '"ok": true' in answer["result"]
    assert Hits.count == 1
