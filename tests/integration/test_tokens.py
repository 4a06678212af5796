"""Self-service API tokens (/settings/tokens/) and their rules: a person takes only the
scopes their groups allow, sees a new token once, revokes their own; staff see and revoke
anyone's; expired and revoked tokens stop working and say why; every creation and
revocation is in the audit trail; bad input is a form error that changes nothing."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from tools_app import services
from tools_app.models import ApiToken, AuditEntry

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r"aw_[A-Za-z0-9_-]{20,}")


def browser(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def make(client: Client, **fields: str) -> tuple[int, str]:
    answer = client.post("/settings/tokens/", {"name": "laptop", "scope": "agent",
                                               "expires": "30", **fields})  # fmt: skip
    return answer.status_code, answer.content.decode()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_a_person_makes_an_agent_token_sees_it_once_and_it_works(creator: User) -> None:
    alice = browser(creator)
    status, page = make(alice, name="laptop Claude Code", expires="7")
    assert status == 200
    [token] = TOKEN.findall(page)
    assert "shown once" in page
    row = ApiToken.objects.get(user=creator)
    assert (row.name, row.scope, row.revoked) == ("laptop Claude Code", "agent", False)
    assert row.expires_at is not None
    assert timedelta(days=6, hours=23) < row.expires_at - timezone.now() <= timedelta(days=7)
    assert Client().get("/api/sessions", headers=bearer(token)).status_code == 200
    listed = alice.get("/settings/tokens/").content.decode()
    assert "laptop Claude Code" in listed and row.prefix in listed
    assert token not in listed  # never shown again
    assert "no-store" in alice.get("/settings/tokens/")["Cache-Control"]


def test_only_a_reviewer_may_take_a_review_token(creator: User, reviewer: User) -> None:
    status, page = make(browser(creator), scope="review")
    assert status == 200 and "Only reviewers may take a review token" in page
    assert not ApiToken.objects.exists()
    assert not AuditEntry.objects.exists()
    make(browser(reviewer), scope="review")
    assert ApiToken.objects.get().scope == "review"


def test_the_service_holds_the_scope_rule_too(creator: User, outsider: User) -> None:
    with pytest.raises(services.Forbidden, match="only reviewers"):
        services.api_token_create(user=creator, scope="review", by=creator)
    with pytest.raises(services.Forbidden):  # nobody makes a token for someone else
        services.api_token_create(user=outsider, scope="agent", by=creator)
    assert not ApiToken.objects.exists()


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"name": "   "}, "Name the token"),
        ({"name": "x" * 101}, "at most 100 characters"),
        ({"expires": "5"}, "Select a valid choice"),
        ({"expires": "never; drop"}, "Select a valid choice"),
        ({"scope": "admin"}, "Select a valid choice"),
    ],
)
def test_bad_input_is_a_form_error_and_changes_nothing(
    creator: User, fields: dict[str, str], problem: str
) -> None:
    status, page = make(browser(creator), **fields)
    assert status == 200 and problem in page
    assert not ApiToken.objects.exists() and not AuditEntry.objects.exists()


def test_an_expired_token_stops_working_and_says_so(creator: User) -> None:
    token = services.api_token_create(user=creator, scope="agent", expires_days=1)
    assert Client().get("/api/sessions", headers=bearer(token)).status_code == 200
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    answer = Client().get("/api/sessions", headers=bearer(token))
    assert answer.status_code == 401
    assert "expired on" in answer.json()["detail"]
    hook = Client().post("/api/hooks/claude-code", {}, content_type="application/json",
                         headers=bearer(token))  # fmt: skip
    reason = hook.json()["hookSpecificOutput"]["permissionDecisionReason"]
    assert "expired on" in reason
    assert "expired" in browser(creator).get("/settings/tokens/").content.decode()


def test_a_token_made_before_expiry_existed_keeps_working(creator: User) -> None:
    token = services.api_token_create(user=creator, scope="agent")
    assert ApiToken.objects.get().expires_at is None
    assert Client().get("/api/sessions", headers=bearer(token)).status_code == 200


def test_a_person_revokes_their_token_after_confirming(creator: User) -> None:
    token = services.api_token_create(user=creator, scope="agent", name="old laptop")
    row = ApiToken.objects.get()
    alice = browser(creator)
    unconfirmed = alice.post(f"/settings/tokens/{row.pk}/revoke/", follow=True)
    assert "confirm it first" in unconfirmed.content.decode()
    assert not ApiToken.objects.get().revoked
    done = alice.post(f"/settings/tokens/{row.pk}/revoke/", {"confirm": "yes"}, follow=True)
    assert "is revoked" in done.content.decode()
    assert ApiToken.objects.get().revoked
    answer = Client().get("/api/sessions", headers=bearer(token))
    assert answer.status_code == 401 and "was revoked" in answer.json()["detail"]
    again = alice.post(f"/settings/tokens/{row.pk}/revoke/", {"confirm": "yes"}, follow=True)
    assert "already revoked" in again.content.decode()
    revoked = AuditEntry.objects.filter(action="token.revoke")
    assert [(e.actor_name, e.via, e.details["user"]) for e in revoked] == [
        ("alice", "browser", "alice")
    ]


def test_someone_elses_token_does_not_exist_for_them(creator: User, reviewer: User) -> None:
    services.api_token_create(user=creator, scope="agent", name="alice's laptop")
    row = ApiToken.objects.get()
    rita = browser(reviewer)
    assert "alice's laptop" not in rita.get("/settings/tokens/").content.decode()
    answer = rita.post(f"/settings/tokens/{row.pk}/revoke/", {"confirm": "yes"})
    assert answer.status_code == 404
    assert not ApiToken.objects.get().revoked


def test_staff_see_everyones_tokens_and_revoke_any(creator: User, superuser: User) -> None:
    services.api_token_create(user=creator, scope="agent", name="alice's laptop")
    row = ApiToken.objects.get()
    sam = browser(superuser)
    page = sam.get("/settings/tokens/").content.decode()
    assert "Everyone else's tokens" in page and "alice&#x27;s laptop" in page
    sam.post(f"/settings/tokens/{row.pk}/revoke/", {"confirm": "yes"})
    assert ApiToken.objects.get().revoked
    entry = AuditEntry.objects.get(action="token.revoke")
    assert (entry.actor_name, entry.details["user"]) == ("sam", "alice")


def test_every_creation_is_in_the_audit_trail_with_who_and_how(creator: User) -> None:
    make(browser(creator), name="ci", expires="never")
    call_command("create_api_token", "alice", "--name", "server", "--expires-days", "30",
                 stdout=StringIO(), stderr=StringIO())  # fmt: skip
    made = AuditEntry.objects.filter(action="token.create").order_by("id")
    assert [(e.actor_name, e.via, e.details["name"]) for e in made] == [
        ("alice", "browser", "ci"),
        ("", "cli", "server"),
    ]
    assert made[0].details["expires_at"] is None and made[1].details["expires_at"]


def test_create_api_token_takes_a_name_and_an_expiry(creator: User) -> None:
    out, err = StringIO(), StringIO()
    call_command("create_api_token", "alice", "--name", "ci", "--expires-days", "7",
                 stdout=out, stderr=err)  # fmt: skip
    assert TOKEN.fullmatch(out.getvalue().strip().splitlines()[-1])
    assert "expiring in 7 days" in err.getvalue()
    assert ApiToken.objects.get().name == "ci"
    with pytest.raises(CommandError, match="--expires-days: a whole number of days"):
        call_command("create_api_token", "alice", "--expires-days", "0", stdout=StringIO())
    assert ApiToken.objects.count() == 1


def test_the_admin_shows_tokens_read_only_so_every_revocation_is_audited(
    creator: User, superuser: User
) -> None:
    services.api_token_create(user=creator, scope="agent", name="alice's laptop")
    row = ApiToken.objects.get()
    sam = browser(superuser)
    assert "alice&#x27;s laptop" in sam.get("/admin/tools_app/apitoken/").content.decode()
    url = f"/admin/tools_app/apitoken/{row.pk}/change/"
    assert 'name="revoked"' not in sam.get(url).content.decode()
    sam.post(url, {"revoked": "on"})
    assert not ApiToken.objects.get().revoked
