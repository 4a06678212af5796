"""A person changes their own password: the old one first, the validators on the new one,
other browsers signed out, the change audited; a wrong old password counts against
password sign-in's limits; an account of the provider has none to change."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tools_app.models import AuditEntry, SignInFailure

PASSWORD = "a-long-password"
NEW = "another-long-passphrase"
HOME = "203.0.113.10"

pytestmark = pytest.mark.django_db


@pytest.fixture
def rosa() -> User:
    return User.objects.create_user("rosa", password=PASSWORD)


def signed_in(user: User) -> Client:
    client = Client(REMOTE_ADDR=HOME)
    client.force_login(user)
    return client


def change(client: Client, old: str, new: str, again: str | None = None):  # type: ignore[no-untyped-def]
    form = {"old_password": old, "new_password1": new, "new_password2": again or new}
    return client.post("/settings/password/", form, follow=True)


def test_a_person_changes_their_password_and_other_browsers_are_signed_out(rosa: User) -> None:
    here, elsewhere = signed_in(rosa), signed_in(rosa)
    page = here.get("/settings/password/").content.decode()
    assert 'aria-current="page" href="/settings/password/">Password' in page  # in the menu
    answer = change(here, PASSWORD, NEW)
    assert answer.redirect_chain == [("/settings/password/", 302)]
    assert "Your password was changed" in answer.content.decode()
    rosa.refresh_from_db()
    assert rosa.check_password(NEW) and not rosa.check_password(PASSWORD)
    assert here.get("/sessions/").status_code == 200  # this browser stays signed in
    assert elsewhere.get("/sessions/").status_code == 302  # the other one is signed out
    entry = AuditEntry.objects.get(action="account.password")
    assert (entry.actor_name, entry.object_repr, entry.via) == ("rosa", "rosa", "browser")
    assert Client().login(username="rosa", password=NEW)


@pytest.mark.parametrize(
    ("old", "new", "again", "says"),
    [
        ("wrong", NEW, None, "Your old password was entered incorrectly"),
        (PASSWORD, NEW, NEW + "x", "The two password fields didn"),
        (PASSWORD, "rosa", None, "This password is too short"),
        (PASSWORD, "password123", None, "This password is too common"),
    ],
)
def test_a_bad_change_says_why_and_changes_nothing(
    rosa: User, old: str, new: str, again: str | None, says: str
) -> None:
    answer = change(signed_in(rosa), old, new, again)
    assert answer.status_code == 200 and answer.redirect_chain == []
    assert says in answer.content.decode().replace("&#x27;", "'")
    rosa.refresh_from_db()
    assert rosa.check_password(PASSWORD)
    assert not AuditEntry.objects.filter(action="account.password").exists()


def test_wrong_old_passwords_count_against_sign_in(rosa: User) -> None:
    client = signed_in(rosa)
    for _ in range(5):
        change(client, "wrong", NEW)
    assert SignInFailure.objects.filter(username="rosa", address=HOME).count() == 5
    answer = change(client, PASSWORD, NEW)  # the right one, now refused unchecked
    assert "Too many failed sign-ins to this account" in answer.content.decode()
    rosa.refresh_from_db()
    assert rosa.check_password(PASSWORD)
    login = Client().post("/login/", {"username": "rosa", "password": PASSWORD}, REMOTE_ADDR=HOME)
    assert login.status_code == 429  # the same door as the login page's


def test_an_account_of_the_provider_has_no_password_to_change() -> None:
    person = User.objects.create_user("sso-person")
    person.set_unusable_password()
    person.save()
    client = signed_in(person)
    page = client.get("/settings/password/").content.decode()
    assert "there is no agentweb password to change here" in page
    assert 'href="/settings/password/"' not in page.split("<main")[0]  # not in the menu
    refused = client.post(
        "/settings/password/",
        {"old_password": "", "new_password1": NEW, "new_password2": NEW},
    )
    assert refused.status_code == 403
    person.refresh_from_db()
    assert not person.has_usable_password()


def test_the_page_needs_a_sign_in() -> None:
    answer = Client().get("/settings/password/")
    assert answer.status_code == 302 and answer["Location"].startswith("/login/")
    posted = Client(enforce_csrf_checks=True).post("/settings/password/", {})
    assert posted.status_code in (302, 403)
