"""Single sign-on (issue 34, item 1) through a real OpenID Connect provider: the npm
`oidc-provider` on 127.0.0.1 (tests/oidc/), one for this module, and an agentweb of its
own that signs in through it, with the provider's `eng-reviewers` mapped to `reviewers`
and `sec-admins` to `policy-admins`. A person signs in with the provider's login form in
Chromium; the answers agentweb must refuse are real codes and states of that provider."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from django.contrib.auth.models import Group, User
from playwright.sync_api import Page, expect

from tests.browser import inbox
from tests.browser.conftest import SCREENSHOTS
from tests.browser.layout import DESKTOP, OverflowWatch
from tests.browser.server import Agent, Daphne
from tests.helpers import Worker
from tests.oidc.provider import OidcProvider, missing
from tools_app import services
from tools_app.models import ToolCall

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(120),
    pytest.mark.skipif(bool(missing()), reason=missing() or "oidc-provider is here"),
]

PROVIDER = "Test IdP"
GROUP_MAP = "eng-reviewers=reviewers,sec-admins=policy-admins"
CI_FILE = ".github/workflows/ci.yml"
COMMAND = "pip install requests"
OFF_MACHINE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")


def claims(login: str, *groups: str) -> dict[str, Any]:
    return {
        "preferred_username": login, "email": f"{login}@example.com",
        "given_name": login.title(), "family_name": "Example", "groups": list(groups),
    }  # fmt: skip


class Site:
    """The provider and the agentweb that signs in through it."""

    def __init__(self, provider: OidcProvider, server: Daphne) -> None:
        self.provider, self.url = provider, server.url


@pytest.fixture(scope="module")
def site(stack: Worker, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp("sso")
    server = Daphne({**stack.env, "DJANGO_DEBUG": "0"}, folder / "daphne.log")
    provider = OidcProvider(f"{server.url}/oidc/callback/", folder)
    provider.start()
    server.env.update(provider.settings(
        AGENTWEB_OIDC_GROUP_MAP=GROUP_MAP, AGENTWEB_OIDC_PROVIDER_NAME=PROVIDER,
        AGENTWEB_BASE_URL=server.url,
    ))  # fmt: skip
    try:
        server.start()
        yield Site(provider, server)
    finally:
        server.stop()
        provider.stop()


@pytest.fixture
def new_page(browser: Any, site: Site) -> Iterator[Callable[[], Page]]:
    """`new_page()`: a page in a fresh browser context (a person's own browser), each
    page of agentweb checked for sideways scrolling before the context closes."""
    contexts: list[tuple[Any, OverflowWatch]] = []

    def open_page() -> Page:
        context = browser.new_context(base_url=site.url, viewport=DESKTOP)
        context.set_default_timeout(20_000)
        # The provider's pages import a web font: nothing leaves this machine.
        context.route(OFF_MACHINE, lambda route: route.abort())
        watch = OverflowWatch(site.url, SCREENSHOTS)
        watch.attach(context)
        contexts.append((context, watch))
        return context.new_page()  # type: ignore[no-any-return]

    yield open_page
    try:
        for context, watch in contexts:
            watch.check(context)
    finally:
        for context, _ in contexts:
            context.close()


def sign_in(page: Page, site: Site, login: str = "") -> None:
    """Press "Sign in with Test IdP"; with a `login`, sign in at the provider's form
    (any password) and consent; without, the provider remembers this browser. Returns
    back at agentweb: signed in, or on the page that says why not."""
    page.goto("/login/")
    page.get_by_role("button", name=f"Sign in with {PROVIDER}").click()
    if login:
        page.locator("input[name=login]").fill(login)
        page.locator("input[name=password]").fill("any password")
        page.get_by_role("button", name="Sign-in").click()
        consent = page.get_by_role("button", name="Continue")
        expect(consent.or_(page.locator("main#main"))).to_be_visible()
        if consent.is_visible():
            consent.click()
    page.wait_for_url(lambda url: url.startswith(site.url) and "/login/" not in url)


def callback_url(page: Page, site: Site) -> str:
    """A fresh callback URL with a real code and state: the sign-in started in this
    browser, followed hop by hop until the provider sends it back to agentweb."""
    location = f"{site.url}/oidc/authenticate/"
    while not location.startswith(f"{site.url}/oidc/callback/"):
        answer = page.request.get(location, max_redirects=0)
        assert answer.status in {302, 303}, (location, answer.status, answer.text()[:500])
        location = answer.headers["location"]
        if location.startswith("/"):
            location = f"{site.provider.issuer}{location}"
    return location


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query)) | changes
    return parts._replace(query=urlencode(query)).geturl()


@pytest.fixture
def waiting_calls(site: Site, workspace: Path) -> Iterator[list[dict[str, Any]]]:
    """Alice's agent asks twice for a person: a write of the CI file, and a command."""
    alice = User.objects.create_user("alice")
    agent = Agent(site.url, services.api_token_create(user=alice, scope="agent"))
    session = agent.start_session(workspace)
    calls = [
        agent.call(session, "write_file", path=CI_FILE, content="on: push\n"),
        agent.call(session, "run_command", command=COMMAND),
    ]
    assert [call["status"] for call in calls] == ["awaiting_approval"] * 2, calls
    yield calls
    agent.http.close()


def decide(page: Page, call_id: int) -> Any:
    """The REST decision, as the signed-in browser sends it (session cookie and CSRF)."""
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    return page.request.post(
        f"/api/tool-calls/{call_id}/decision",
        data={"decision": "approve"}, headers={"X-CSRFToken": token},
    )  # fmt: skip


def groups_of(username: str) -> set[str]:
    return set(User.objects.get(username=username).groups.values_list("name", flat=True))


def test_provider_groups_give_reviewer_rights_until_the_next_sign_in_without_them(
    site: Site, new_page: Callable[[], Page], waiting_calls: list[dict[str, Any]]
) -> None:
    site.provider.accounts({"rita": claims("rita", "eng-reviewers", "sec-admins", "staff")})
    page = new_page()
    sign_in(page, site, "rita")

    inbox.open_inbox(page)
    expect(inbox.card(page, CI_FILE)).to_be_visible()
    rita = User.objects.get(username="rita")
    assert (rita.email, rita.first_name, rita.has_usable_password()) == (
        "rita@example.com", "Rita", False,
    )  # fmt: skip
    assert groups_of("rita") == {"reviewers", "policy-admins"}  # "staff" is not mapped
    approved = decide(page, waiting_calls[0]["id"])
    assert approved.status == 200, approved.text()
    rita.groups.add(Group.objects.create(name="oncall"))  # given by hand: left alone

    page.get_by_role("button", name="Log out rita").click()
    expect(page.get_by_role("link", name=f"Sign out of {PROVIDER} too")).to_be_visible()
    page.goto("/approvals/")
    expect(page).to_have_url(f"{site.url}/login/?next=/approvals/")

    site.provider.accounts({"rita": claims("rita")})  # removed from her provider groups
    sign_in(page, site)  # the provider remembers her: no form this time
    assert groups_of("rita") == {"oncall"}
    inbox.open_inbox(page)
    expect(page.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    refused = decide(page, waiting_calls[1]["id"])
    assert refused.status in {403, 404}, refused.text()
    assert ToolCall.objects.get(pk=waiting_calls[1]["id"]).status == "awaiting_approval"


def test_a_forged_state_and_a_replayed_code_are_refused_and_sign_out_reaches_the_provider(
    site: Site, new_page: Callable[[], Page]
) -> None:
    site.provider.accounts({"carol": claims("carol")})
    page = new_page()
    used: list[str] = []
    page.on("request", lambda r: used.append(r.url) if "/oidc/callback/" in r.url else None)
    sign_in(page, site, "carol")
    first_code = dict(parse_qsl(urlsplit(used[0]).query))["code"]

    forged = page.goto(with_query(callback_url(page, site), state="forged-state"))
    assert forged is not None and forged.status == 400
    expect(page.get_by_role("alert")).to_contain_text("does not match a sign-in started")

    replayed = page.goto(with_query(callback_url(page, site), code=first_code))
    assert replayed is not None and replayed.status == 403
    expect(page.get_by_role("alert")).to_contain_text("its code was already used")
    assert User.objects.filter(username="carol").count() == 1

    page.goto("/approvals/")  # still signed in: the refused answers changed nothing
    page.get_by_role("button", name="Log out carol").click()
    page.get_by_role("link", name=f"Sign out of {PROVIDER} too").click()
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(f"{site.url}/login/")
    page.get_by_role("button", name=f"Sign in with {PROVIDER}").click()
    expect(page.locator("input[name=login]")).to_be_visible()  # the provider asks again


def test_a_person_disabled_here_or_refused_by_the_provider_cannot_sign_in(
    site: Site, new_page: Callable[[], Page]
) -> None:
    site.provider.accounts({"dave": claims("dave", "eng-reviewers")})
    page = new_page()
    sign_in(page, site, "dave")
    User.objects.filter(username="dave").update(is_active=False)
    page.goto("/approvals/")  # the disabled account's session ended with it
    expect(page).to_have_url(f"{site.url}/login/?next=/approvals/")
    sign_in(page, site)
    expect(page.get_by_role("alert")).to_contain_text("The agentweb account 'dave' is disabled")
    assert groups_of("dave") == {"reviewers"}  # nothing of a disabled account changes

    stranger = new_page()
    stranger.goto("/login/")
    stranger.get_by_role("button", name=f"Sign in with {PROVIDER}").click()
    stranger.locator("input[name=login]").fill("mallory")
    stranger.get_by_role("link", name="[ Cancel ]").click()  # the provider says no
    expect(stranger.get_by_role("alert")).to_contain_text(
        "The provider did not sign you in: End-User aborted interaction"
    )
    assert not User.objects.filter(username="mallory").exists()
