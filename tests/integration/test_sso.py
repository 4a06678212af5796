"""Single sign-on's server side, without a provider (tests/browser/test_sso.py signs in
through a real one): the account and groups made from verified claims, password login
switched off with the superusers' break-glass, the admin's one action that revokes all of
a person's tokens, and the system check on half-set settings."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from tools_app import access, services
from tools_app.checks import check_sso
from tools_app.core.sso import SsoRefused
from tools_app.models import ApiToken, AuditEntry
from tools_app.services.sso import sso_user_sign_in

pytestmark = pytest.mark.django_db

GROUP_MAP = '{"eng-reviewers": "reviewers", "sec-admins": ["policy-admins"]}'
PASSWORD = "a-long-password"


@pytest.fixture
def sso_settings(settings: Any) -> Any:
    settings.AGENTWEB_OIDC_GROUP_MAP = GROUP_MAP
    settings.AGENTWEB_OIDC_USERNAME_CLAIM = "preferred_username"
    settings.AGENTWEB_OIDC_GROUPS_CLAIM = "groups"
    return settings


def rita_claims(*groups: str) -> dict[str, Any]:
    return {"sub": "u-1", "preferred_username": "rita", "email": "rita@example.com",
            "given_name": "Rita", "family_name": "Ray", "groups": list(groups)}  # fmt: skip


def groups_of(user: User) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def test_a_first_sign_in_makes_the_account_in_its_mapped_groups(sso_settings: Any) -> None:
    rita = sso_user_sign_in(claims=rita_claims("eng-reviewers", "sec-admins", "staff"))
    assert (rita.username, rita.email, rita.last_name) == ("rita", "rita@example.com", "Ray")
    assert not rita.has_usable_password()
    assert groups_of(rita) == {"reviewers", "policy-admins"}


def test_each_sign_in_sets_the_mapped_groups_exactly_and_leaves_the_others(
    sso_settings: Any,
) -> None:
    rita = sso_user_sign_in(claims=rita_claims("eng-reviewers", "sec-admins"))
    rita.groups.add(Group.objects.create(name="oncall"))  # given by hand in the admin
    again = sso_user_sign_in(claims=rita_claims("sec-admins") | {"email": "r@example.org"})
    assert again.pk == rita.pk
    assert groups_of(again) == {"policy-admins", "oncall"}
    assert User.objects.get(pk=rita.pk).email == "r@example.org"
    sso_user_sign_in(claims=rita_claims("sec-admins"))  # nothing changes: nothing recorded
    entries = AuditEntry.objects.filter(action=AuditEntry.Action.ACCOUNT_GROUPS).order_by("id")
    assert [(e.actor_name, e.object_repr, e.via, e.details) for e in entries] == [
        ("rita", "rita", "browser", {"joined": ["policy-admins", "reviewers"], "left": []}),
        ("rita", "rita", "browser", {"joined": [], "left": ["reviewers"]}),
    ]


def test_a_disabled_account_is_refused_and_nothing_of_it_changes(sso_settings: Any) -> None:
    rita = sso_user_sign_in(claims=rita_claims("eng-reviewers"))
    User.objects.filter(pk=rita.pk).update(is_active=False)
    with pytest.raises(SsoRefused, match="'rita' is disabled"):
        sso_user_sign_in(claims=rita_claims() | {"email": "new@example.com"})
    rita.refresh_from_db()
    assert (rita.email, groups_of(rita)) == ("rita@example.com", {"reviewers"})


def test_a_mapped_group_carries_the_permissions_an_admin_gave_it(sso_settings: Any) -> None:
    """policy-admins is an ordinary group: the admin gives it change_policy once, and
    the provider's sec-admins then make and unmake policy admins."""
    admins = Group.objects.create(name="policy-admins")
    admins.permissions.add(Permission.objects.get(codename="change_policy"))
    assert access.is_policy_admin(sso_user_sign_in(claims=rita_claims("sec-admins")))
    rita = sso_user_sign_in(claims=rita_claims("eng-reviewers"))
    rita = User.objects.get(pk=rita.pk)  # a fresh permission cache, as the next request has
    assert access.is_reviewer(rita) and not access.is_policy_admin(rita)


def test_a_malformed_group_map_refuses_every_sign_in_saying_why(sso_settings: Any) -> None:
    sso_settings.AGENTWEB_OIDC_GROUP_MAP = "eng-reviewers"
    with pytest.raises(SsoRefused, match="AGENTWEB_OIDC_GROUP_MAP: 'eng-reviewers': write"):
        sso_user_sign_in(claims=rita_claims())
    assert not User.objects.filter(username="rita").exists()


def test_with_password_login_off_the_login_page_refuses_passwords(settings: Any) -> None:
    settings.AGENTWEB_PASSWORD_LOGIN = False
    User.objects.create_user("bob", password=PASSWORD)
    client = Client()
    page = client.get("/login/").content.decode()
    assert 'name="password"' not in page
    assert "Password sign-in is off and single sign-on is not configured" in page
    answer = client.post("/login/", {"username": "bob", "password": PASSWORD})
    assert answer.status_code == 403
    assert "Password sign-in is off here" in answer.content.decode()
    assert client.get("/approvals/").status_code == 302  # not signed in


def test_with_sso_on_and_passwords_off_the_login_page_shows_only_the_provider(
    settings: Any,
) -> None:
    settings.AGENTWEB_PASSWORD_LOGIN = False
    settings.AGENTWEB_SSO = True
    settings.AGENTWEB_OIDC_PROVIDER_NAME = "Okta"
    page = Client().get("/login/?next=/sessions/").content.decode()
    assert "Sign in with Okta" in page
    assert 'action="/oidc/authenticate/"' in page and 'value="/sessions/"' in page
    assert 'name="password"' not in page


def test_with_password_login_off_a_superuser_still_gets_in_at_the_admin(settings: Any) -> None:
    """The break-glass: a superuser's password, at /admin/login/, when the provider is down."""
    settings.AGENTWEB_PASSWORD_LOGIN = False
    User.objects.create_superuser("sam", password=PASSWORD)
    User.objects.create_user("stef", password=PASSWORD, is_staff=True)
    staff = Client()
    staff.post("/admin/login/", {"username": "stef", "password": PASSWORD})
    assert staff.get("/admin/").status_code == 302  # refused: back to the admin's login
    admin = Client()
    admin.post("/admin/login/", {"username": "sam", "password": PASSWORD})
    assert admin.get("/admin/").status_code == 200


def test_the_sso_pages_are_not_found_while_sso_is_off() -> None:
    client = Client()
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=c&state=s").status_code == 404


@pytest.fixture
def sso_on(settings: Any) -> Any:
    settings.AGENTWEB_SSO = True
    settings.OIDC_RP_CLIENT_ID = "agentweb"
    return settings


def test_named_endpoints_need_no_discovery_and_the_request_carries_pkce(sso_on: Any) -> None:
    sso_on.AGENTWEB_OIDC_ISSUER = "http://127.0.0.1:9/never-asked"
    sso_on.AGENTWEB_OIDC_ENDPOINTS = {
        key: f"https://idp.example.com/{key}"
        for key in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")
    }
    answer = Client().get("/oidc/authenticate/?next=/sessions/")
    assert answer.status_code == 302
    target = urlsplit(answer["Location"])
    query = dict(parse_qsl(target.query))
    assert target.netloc + target.path == "idp.example.com/authorization_endpoint"
    assert query["client_id"] == "agentweb" and query["response_type"] == "code"
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert query["state"] and query["nonce"]


def test_a_provider_that_does_not_answer_is_said_on_the_login_page(sso_on: Any) -> None:
    sso_on.AGENTWEB_OIDC_ISSUER = "http://127.0.0.1:9/realm"  # the discard port: refused
    sso_on.AGENTWEB_OIDC_ENDPOINTS = {}
    answer = Client().get("/oidc/authenticate/")
    assert answer.status_code == 502
    assert "The sign-in provider did not answer as expected at http://127.0.0.1:9/realm/" in (
        answer.content.decode()
    )


def test_the_admin_revokes_all_of_a_persons_tokens_in_one_action() -> None:
    sam = User.objects.create_superuser("sam", password=PASSWORD)
    rita = User.objects.create_user("rita")
    kept = User.objects.create_user("bob")
    for user, scope in ((rita, "agent"), (rita, "review"), (kept, "agent")):
        services.api_token_create(user=user, scope=scope)
    client = Client()
    client.force_login(sam)
    answer = client.post(
        "/admin/auth/user/",
        {"action": "revoke_api_tokens", "_selected_action": [rita.pk]},
        follow=True,
    )
    assert "Revoked 2 token(s) of rita." in answer.content.decode()
    assert set(ApiToken.objects.values_list("user__username", "revoked")) == {
        ("rita", True), ("bob", False),
    }  # fmt: skip
    entries = AuditEntry.objects.filter(action=AuditEntry.Action.TOKEN_REVOKE)
    assert [(e.actor_name, e.via) for e in entries] == [("sam", "admin")] * 2


@pytest.mark.parametrize(
    ("changes", "ids"),
    [
        ({}, []),
        ({"AGENTWEB_OIDC_CLIENT_ID": "agentweb"}, ["agentweb.W010", "agentweb.W010"]),
        ({"AGENTWEB_OIDC_GROUP_MAP": "{oops"}, ["agentweb.E010"]),
        ({"AGENTWEB_PASSWORD_LOGIN": False}, ["agentweb.W011"]),
    ],
)
def test_the_system_check_names_half_set_sso_settings(
    settings: Any, changes: dict[str, Any], ids: list[str]
) -> None:
    for name, value in changes.items():
        setattr(settings, name, value)
    assert [message.id for message in check_sso()] == ids
