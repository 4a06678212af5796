"""Password sign-in's limits, tried as someone guessing passwords would: a run of wrong
passwords shuts password sign-in for that account from that address (even the right
password is then refused, unchecked), a longer run over many accounts shuts it for the
address, another address is never kept out, the admin's login counts the same failures,
and a burst sent at once to two web processes checks no more passwords than the limit."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from io import StringIO
from pathlib import Path

import httpx
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from tests.browser.server import Daphne
from tools_app import services
from tools_app.models import AuditEntry, SignInFailure

PASSWORD = "a-long-password"
HOME = "203.0.113.10"
ELSEWHERE = "198.51.100.20"

pytestmark = pytest.mark.django_db


@pytest.fixture
def rosa() -> User:
    return User.objects.create_user("rosa", password=PASSWORD)


def sign_in(client: Client, username: str, password: str, address: str, path: str = "/login/"):  # type: ignore[no-untyped-def]
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def fail(client: Client, times: int, username: str = "rosa", address: str = HOME) -> None:
    for _ in range(times):
        answer = sign_in(client, username, "wrong", address)
        assert answer.status_code == 200
        assert b"didn&#x27;t match" in answer.content


def test_five_wrong_passwords_shut_the_account_from_that_address_only(
    client: Client, rosa: User, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="tools_app.services.sign_in"):
        fail(client, 5)
    shut = sign_in(client, "Rosa", PASSWORD, HOME)  # the right password, another spelling
    assert shut.status_code == 429
    assert 14 * 60 <= int(shut["Retry-After"]) <= 15 * 60
    text = shut.content.decode()
    assert "Too many failed sign-ins to this account from your address" in text
    assert "refused for 15 minutes" in text
    assert "_auth_user_id" not in client.session
    assert SignInFailure.objects.count() == 5, "a refused attempt is not kept"

    elsewhere = Client()
    assert sign_in(elsewhere, "rosa", PASSWORD, ELSEWHERE).status_code == 302
    assert int(elsewhere.session["_auth_user_id"]) == rosa.pk

    entry = AuditEntry.objects.get(action="sign_in.lock")
    assert entry.object_repr == f"rosa from {HOME}"
    assert entry.details == {"address": HOME, "failures": 5, "minutes": 15}
    assert [r.getMessage() for r in caplog.records if r.name.startswith("tools_app")] == [
        f"sign-in of 'rosa' from {HOME}: 5 failed passwords within 15 minutes: password "
        "sign-in to this account from this address is shut for 15 minutes"
    ]


def test_the_door_opens_as_failures_age_out_and_a_success_forgets_them(
    client: Client, rosa: User
) -> None:
    fail(client, 5)
    assert sign_in(client, "rosa", PASSWORD, HOME).status_code == 429
    SignInFailure.objects.update(at=timezone.now() - timedelta(minutes=15, seconds=1))
    assert sign_in(client, "rosa", PASSWORD, HOME).status_code == 302
    assert SignInFailure.objects.count() == 0, "the success forgot the pair's failures"

    fail(client, 4)
    assert sign_in(client, "rosa", PASSWORD, HOME).status_code == 302
    fail(client, 4)  # counted afresh: four more do not shut it
    assert sign_in(client, "rosa", PASSWORD, HOME).status_code == 302


def test_an_address_trying_every_account_is_shut_for_all_of_them(
    client: Client, rosa: User
) -> None:
    for index in range(20):
        fail(client, 1, username=f"guess{index}")
    shut = sign_in(client, "rosa", PASSWORD, HOME)
    assert shut.status_code == 429
    assert "Too many failed sign-ins from your address" in shut.content.decode()
    assert sign_in(Client(), "rosa", PASSWORD, ELSEWHERE).status_code == 302
    assert AuditEntry.objects.filter(action="sign_in.lock").count() == 1


def test_the_admin_login_counts_the_same_failures(client: Client) -> None:
    User.objects.create_superuser("sam", password=PASSWORD)
    fail(client, 3, username="sam")
    for _ in range(2):
        sign_in(client, "sam", "wrong", HOME, path="/admin/login/")
    shut = sign_in(client, "sam", PASSWORD, HOME, path="/admin/login/")
    assert "Too many failed sign-ins to this account" in shut.content.decode()
    assert "_auth_user_id" not in client.session
    assert sign_in(client, "sam", PASSWORD, HOME).status_code == 429

    admin = Client()  # the break-glass from another address, and the admin's way in sooner
    assert sign_in(admin, "sam", PASSWORD, ELSEWHERE, path="/admin/login/").status_code == 302
    listing = admin.get("/admin/tools_app/signinfailure/")
    assert listing.status_code == 200
    assert "5 sign in failures" in listing.content.decode()
    ids = list(SignInFailure.objects.filter(username="sam").values_list("pk", flat=True))
    deleted = admin.post(
        "/admin/tools_app/signinfailure/",
        {"action": "delete_selected", "_selected_action": ids, "post": "yes"},
    )
    assert deleted.status_code == 302 and not SignInFailure.objects.exists()
    entry = AuditEntry.objects.get(action="sign_in.clear")
    assert (entry.via, entry.actor_name, entry.object_repr) == ("admin", "sam", f"sam from {HOME}")
    assert sign_in(client, "sam", PASSWORD, HOME).status_code == 302


def test_an_address_the_client_writes_is_never_taken_for_its_own(
    client: Client, rosa: User
) -> None:
    """Behind this host's proxy the address it appends counts, not what the client wrote
    to its left; from a peer that is no proxy the header counts for nothing."""
    for index in range(5):
        client.post(
            "/login/", {"username": "rosa", "password": "wrong"},
            REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=f"10.9.9.{index}, {HOME}",
        )  # fmt: skip
    behind_proxy = {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": f"10.9.9.9, {HOME}"}
    right = {"username": "rosa", "password": PASSWORD}
    assert client.post("/login/", right, **behind_proxy).status_code == 429
    for _ in range(5):
        client.post(
            "/login/", {"username": "rosa", "password": "wrong"},
            REMOTE_ADDR=ELSEWHERE, HTTP_X_FORWARDED_FOR="10.9.9.10",
        )  # fmt: skip
    addresses = set(SignInFailure.objects.values_list("address", flat=True))
    assert addresses == {HOME, ELSEWHERE}


def test_the_sweep_forgets_failures_past_the_window(rosa: User) -> None:
    client = Client()
    fail(client, 2)
    SignInFailure.objects.filter(pk=SignInFailure.objects.order_by("pk")[0].pk).update(
        at=timezone.now() - timedelta(minutes=16)
    )
    assert services.sign_in_prune() == 1
    assert SignInFailure.objects.count() == 1


def test_the_command_opens_an_account_or_an_address_at_once(client: Client, rosa: User) -> None:
    fail(client, 5)
    fail(client, 5, address=ELSEWHERE)
    out = StringIO()
    call_command("sign_in_clear", "ROSA", "--address", HOME, stdout=out)
    assert out.getvalue().strip() == "Forgot 5 failed sign-ins."
    assert sign_in(client, "rosa", PASSWORD, HOME).status_code == 302
    assert sign_in(Client(), "rosa", PASSWORD, ELSEWHERE).status_code == 429
    call_command("sign_in_clear", "rosa", stdout=out)
    assert not SignInFailure.objects.exists()
    cleared = list(AuditEntry.objects.filter(action="sign_in.clear").order_by("id"))
    assert [(e.via, e.object_repr, e.reason) for e in cleared] == [
        ("cli", f"rosa from {HOME}", "5 failed sign-ins forgotten"),
        ("cli", f"rosa from {ELSEWHERE}", "5 failed sign-ins forgotten"),
    ]
    with pytest.raises(CommandError, match="Name an account"):
        call_command("sign_in_clear")


@pytest.fixture
def two_webs(services_env: dict[str, str], tmp_path: Path) -> Iterator[list[str]]:
    servers = [Daphne(dict(services_env), tmp_path / f"web{index}.log") for index in (0, 1)]
    for server in servers:
        server.start()
    yield [server.url for server in servers]
    for server in servers:
        server.stop()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_burst_at_two_web_processes_checks_no_more_than_the_limit(
    two_webs: list[str],
) -> None:
    User.objects.create_user("rosa", password=PASSWORD)
    forms = []
    for url in two_webs:
        http = httpx.Client(base_url=url, timeout=60)
        page = http.get("/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
        assert token
        forms.append((http, token.group(1)))

    def guess(index: int) -> int:
        http, token = forms[index % 2]
        data = {"username": "rosa", "password": f"wrong{index}", "csrfmiddlewaretoken": token}
        return http.post("/login/", data=data).status_code

    with ThreadPoolExecutor(max_workers=24) as pool:
        statuses = list(pool.map(guess, range(24)))
    checked = statuses.count(200)
    assert set(statuses) <= {200, 429}
    assert 1 <= checked <= 5, statuses
    assert SignInFailure.objects.filter(username="rosa").count() == checked
    http, token = forms[0]
    right = {"username": "rosa", "password": PASSWORD, "csrfmiddlewaretoken": token}
    assert http.post("/login/", data=right).status_code == (429 if checked == 5 else 302)
    for http, _ in forms:
        http.close()
