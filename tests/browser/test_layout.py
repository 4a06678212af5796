"""Every page of the site fits a phone (390 px) and a desktop (1366 px): no sideways
scrolling (`document.documentElement.scrollWidth <= window.innerWidth`).

The pages come from the URL conf, as tests/integration/test_access_matrix.py lists them:
tools_app's pages (a new page without URL arguments is visited without being named here;
one with arguments needs its ids below), the login page, the API docs and the admin (its
index, and each registered model's list and newest object, or its add form). One Chromium, one
server, one login: each page is loaded once at desktop width, then measured again
resized to a phone. A screenshot of each of agentweb's own pages at both widths (the
window, not the whole page) is left in var/screenshots/layout/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import RequestFactory
from django.urls import URLPattern, reverse
from playwright.sync_api import Page

from tests.browser.layout import DESKTOP, PHONE, OverflowWatch
from tests.browser.server import PASSWORD, Agent
from tools_app import urls
from tools_app.models import PullRequest, ToolCall
from tools_app.services import policies, skills

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(180),
]

# Parts of a page (fetched into one), downloads and form posts: not pages of their own.
NOT_PAGES = {
    "approval_cards": "a fragment of the inbox",
    "approval_card": "a fragment of the inbox",
    "remember_count": "a fragment of a card",
    "session_timeline": "a fragment of the session page",
    "decide": "POST only",
    "session_cancel": "POST only",
    "skill_enabled": "POST only",
    "skill_delete": "POST only",
    "token_revoke": "POST only",
    "slack_interactivity": "POST only, from Slack",
    "skill_export": "a download",
    "audit_export": "a download",
}
LONG = "a-very-long-name-without-any-space-" * 4  # an agent's words need not wrap kindly


@pytest.fixture
def sam() -> User:
    return User.objects.create_superuser("sam", "sam@example.com", PASSWORD)


@pytest.fixture
def world(agent: Agent, workspace: Path, sam: User) -> dict[str, Any]:
    """A model-less session with calls waiting (a diff, a long command), a skill with a
    tool, a policy with rules, a pull request: the ids the pages with arguments need."""
    session = agent.start_session(workspace)
    agent.call(session, "write_file", path=f"docs/{LONG}.md", content=f"{LONG}\n" * 3)
    agent.call(session, "write_file", path=".env", content=f"KEY={LONG}\n")
    agent.call(session, "run_command", command=f"pip install {LONG} && curl https://{LONG}.com")
    skills.skill_create(data=_skill(), user=sam)
    policy = policies.policy_import(data=_policy(), user=sam)
    pull = PullRequest.objects.create(
        session_id=session["id"], repo_key="demo", number=1, title=f"Rename {LONG}",
        base="main", head=f"feature/{LONG}", diff=f"+{LONG}\n",
    )  # fmt: skip
    call = ToolCall.objects.filter(session_id=session["id"]).order_by("id").first()
    assert call is not None
    return {"session_id": session["id"], "tool_call_id": call.pk, "pull_id": pull.pk,
            "name": "shipping", "policy": policy.pk}  # fmt: skip


def _skill() -> dict[str, Any]:
    tool = {
        "name": "announce",
        "description": f"Write the announcement for {LONG}",
        "inputSchema": {"type": "object", "properties": {"version": {"type": "string"}}},
        "executor": {"kind": "prompt", "template": "Version $version is out."},
    }
    return {"name": "shipping", "description": LONG, "triggers": ["release", LONG],
            "tools": [tool]}  # fmt: skip


def _policy() -> dict[str, Any]:
    rules = [
        {"tool": "run_command", "args": {"command": f"re:^{LONG}( --[a-z]+)*$"},
         "decision": "require_approval", "reason": f"Ask before {LONG} " * 3},
        {"tool": "write_file", "args": {"path": f"src/{LONG}/**"}, "decision": "deny",
         "reason": "generated"},
    ]  # fmt: skip
    return {"name": "layout", "protected_paths": [f"{LONG}/**"], "rules": rules}


def site_pages(ids: dict[str, Any], superuser: User) -> list[str]:
    """Every page's URL, from the URL conf and the admin's registry."""
    pages = ["/login/", "/api/docs"]
    for pattern in urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        if pattern.name in NOT_PAGES:
            continue
        missing = set(pattern.pattern.regex.groupindex) - set(ids)
        assert not missing, f"{pattern.name}: give the world a {missing}, or name it in NOT_PAGES"
        arguments = {name: ids[name] for name in pattern.pattern.regex.groupindex}
        pages.append(reverse(pattern.name, kwargs=arguments))
    pages += [reverse("admin:index"), reverse("admin:tools_app_policy_try", args=[ids["policy"]])]
    request = RequestFactory().get("/admin/")
    request.user = superuser
    for model, model_admin in admin.site._registry.items():
        name = f"admin:{model._meta.app_label}_{model._meta.model_name}"
        pages.append(reverse(f"{name}_changelist"))
        newest = model._default_manager.order_by("-pk").first()  # the world's, if any
        if newest is not None:
            pages.append(reverse(f"{name}_change", args=[newest.pk]))
        elif model_admin.has_add_permission(request):  # the same form, empty
            pages.append(reverse(f"{name}_add"))
    return pages


def test_every_page_fits_a_phone_and_a_desktop(
    log_in: Any, live_server_url: str, sam: User, world: dict[str, Any], screenshots: Path
) -> None:
    page: Page = log_in(sam)
    watch = OverflowWatch(live_server_url, screenshots)
    folder = screenshots / "layout"
    folder.mkdir(exist_ok=True)
    sizes = [(DESKTOP, "desktop"), (PHONE, "phone")]
    for url in site_pages(world, sam):
        answer = page.goto(url)  # at the size the last page ended at: one resize a page
        assert answer is not None and answer.ok, f"{url}: {answer and answer.status}"
        for size, width in sizes:
            page.set_viewport_size(size)
            watch.measure(page, f"{width} width")
            if not url.startswith("/admin/"):  # the admin is Django's own, and long
                name = url.strip("/").replace("/", "-") or "home"
                page.screenshot(path=folder / f"{name}-{width}.png")
        sizes.reverse()
    assert not watch.faults, "pages scroll sideways:\n" + "\n".join(watch.faults)
