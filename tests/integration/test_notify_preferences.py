"""Each person's own notification settings (issue #25): a page of their own, behind login
and CSRF, with each mistake on its field, and what it changes in who is told what —
through a real SMTP server on 127.0.0.1."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from tests.integration.notify_servers import parts_of, smtp_server
from tools_app import services
from tools_app.models import AgentSession, Channel, Delivery, NotifyPreference, Policy, ToolCall
from tools_app.services.notifications import notify_digests

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
PAGE = "/settings/notifications/"


@pytest.fixture(autouse=True)
def local_mail(settings: Any) -> Iterator[Any]:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    controller, box = smtp_server()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", controller.port
    yield box
    controller.stop()


@pytest.fixture
def browser(reviewer: User) -> Client:
    """Rita in her browser, where every POST needs the CSRF token."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    return client


def save(browser: Client, **fields: str) -> Any:
    page = browser.get(PAGE).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    form = {"mode": "immediately", "digest_minutes": "30", "email": "rita@example.com", **fields}
    return browser.post(PAGE, {**form, "csrfmiddlewaretoken": token.group(1)})


def waiting_call(workspace: Path, creator: User, path: str = ".env") -> ToolCall:
    session = AgentSession.objects.filter(creator=creator).first() or AgentSession.objects.create(
        task="rotate the key", repo=str(workspace), workspace=str(workspace), creator=creator,
        status=AgentSession.Status.RUNNING, policy=Policy.objects.get(name="default"),
    )  # fmt: skip
    call = services.tool_call_run_in_process(
        session=session, tool="write_file", args={"path": path, "content": "KEY=v\n"}
    )
    assert call.status == "awaiting_approval"
    return call


def test_the_page_is_linked_from_the_menu_and_needs_login_and_csrf(
    browser: Client, reviewer: User
) -> None:
    assert f'href="{PAGE}"' in browser.get("/approvals/").content.decode()
    assert Client().get(PAGE).status_code == 302  # to the login page
    forged = browser.post(PAGE, {"mode": "off", "digest_minutes": "30", "email": ""})
    assert forged.status_code == 403
    assert not NotifyPreference.objects.exists()
    assert save(browser, mode="off", email="").status_code == 302
    assert NotifyPreference.objects.get(user=reviewer).mode == "off"


@pytest.mark.parametrize(
    ("fields", "field", "error"),
    [
        ({"mode": "digest", "digest_minutes": "0"}, "digest_minutes", "every 5 to 1440 minutes"),
        ({"mode": "digest", "digest_minutes": "99999"}, "digest_minutes", "every 5 to 1440"),
        ({"email": "rita-at-example"}, "email", "is not an email address"),
        ({"email": ""}, "email", "or turn notifications off"),
        ({"mode": "hourly"}, "mode", "Select a valid choice"),
        ({"digest_minutes": "soon"}, "digest_minutes", "Enter a whole number"),
    ],
)
def test_a_mistake_is_shown_on_its_field_and_changes_nothing(
    browser: Client, reviewer: User, fields: dict[str, str], field: str, error: str
) -> None:
    answer = save(browser, **fields)
    assert answer.status_code == 200
    page = answer.content.decode()
    assert f'id="id_{field}_error"' in page and error in page, page
    assert not NotifyPreference.objects.exists()
    reviewer.refresh_from_db()
    assert reviewer.email == ""


def test_what_rita_chooses_is_how_she_is_told(
    browser: Client, local_mail: Any, workspace: Path, creator: User
) -> None:
    Channel.objects.create(name="mail", kind="email", to_reviewers=True)
    assert save(browser, mode="digest", digest_minutes="15").status_code == 302
    first = waiting_call(workspace, creator)
    assert local_mail.messages == []  # held for her digest
    assert Delivery.objects.get(tool_call=first).state == "held"
    assert notify_digests(now=timezone.now() + timedelta(minutes=15)) == 1
    (digest,) = local_mail.messages
    assert digest["To"] == "rita@example.com"
    assert f"#call-{first.pk}" in parts_of(digest)["text/plain"]

    assert save(browser, mode="off", email="").status_code == 302
    waiting_call(workspace, creator, "deploy/.env.prod")
    assert len(local_mail.messages) == 1 and not Delivery.objects.filter(state="pending")

    assert save(browser, mode="immediately", email="rita@ops.example").status_code == 302
    third = waiting_call(workspace, creator, "config/.env.local")
    assert local_mail.messages[-1]["To"] == "rita@ops.example"
    assert f"Tool call {third.pk}" in local_mail.messages[-1]["Subject"]


def test_leaving_the_digest_sends_what_it_holds(
    browser: Client, local_mail: Any, workspace: Path, creator: User
) -> None:
    Channel.objects.create(name="mail", kind="email", to_reviewers=True)
    assert save(browser, mode="digest", digest_minutes="60").status_code == 302
    call = waiting_call(workspace, creator)
    assert local_mail.messages == []
    assert save(browser, mode="immediately").status_code == 302
    (digest,) = local_mail.messages
    assert f"#call-{call.pk}" in parts_of(digest)["text/plain"]
    assert not Delivery.objects.filter(state="held").exists()


def test_a_digest_chosen_now_comes_when_its_first_period_ends(
    browser: Client, local_mail: Any, workspace: Path, creator: User
) -> None:
    """Switching to a 5-minute digest sends nothing at once: the sweep a minute later
    holds the call, the one after five minutes sends it."""
    Channel.objects.create(name="mail", kind="email", to_reviewers=True)
    assert save(browser, mode="immediately").status_code == 302
    chosen = timezone.now()
    assert save(browser, mode="digest", digest_minutes="5").status_code == 302
    call = waiting_call(workspace, creator)
    assert notify_digests(now=chosen + timedelta(seconds=1)) == 0
    assert notify_digests(now=chosen + timedelta(minutes=4)) == 0
    assert local_mail.messages == []
    assert notify_digests(now=chosen + timedelta(minutes=5, seconds=1)) == 1
    (digest,) = local_mail.messages
    assert f"#call-{call.pk}" in parts_of(digest)["text/plain"]


def test_a_digest_set_in_the_admin_starts_its_period_at_the_first_sweep(
    reviewer: User, local_mail: Any, workspace: Path, creator: User
) -> None:
    Channel.objects.create(name="mail", kind="email", to_reviewers=True)
    User.objects.filter(pk=reviewer.pk).update(email="rita@example.com")
    NotifyPreference.objects.create(user=reviewer, mode="digest", digest_minutes=5)
    waiting_call(workspace, creator)
    first_sweep = timezone.now()
    assert notify_digests(now=first_sweep) == 0 and local_mail.messages == []
    assert notify_digests(now=first_sweep + timedelta(minutes=5)) == 1
    assert len(local_mail.messages) == 1
