"""A skill author creates, checks, exports and imports a skill in a real Chromium."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import Page, expect

from tests.browser.server import PASSWORD
from tools_app.models import Skill

pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.timeout(90),
]

TOOL = {
    "name": "announce",
    "description": "Write the release announcement",
    "inputSchema": {"type": "object", "properties": {"version": {"type": "string"}}},
    "executor": {"kind": "prompt", "template": "Version $version is out."},
}


def test_a_skill_author_creates_checks_exports_and_imports_a_skill(
    log_in: Any, screenshots: Path, tmp_path: Path
) -> None:
    sam = User.objects.create_user("sam", "sam@example.com", PASSWORD, is_staff=True)
    page: Page = log_in(sam)
    page.goto("/skills/")
    page.get_by_role("link", name="New skill").click()
    page.get_by_label("Name").fill("shipping")
    page.get_by_label("Triggers").fill("ship, release notes")
    page.get_by_label("Tools (JSON)").fill(json.dumps([{**TOOL, "inputSchema": {"type": 7}}]))
    page.get_by_role("button", name="Save skill").click()
    expect(page.get_by_role("alert").first).to_contain_text("inputSchema")
    assert not Skill.objects.filter(name="shipping").exists()

    page.get_by_label("Tools (JSON)").fill(json.dumps([TOOL]))
    page.get_by_role("button", name="Save skill").click()
    page.wait_for_url("**/skills/")
    page.get_by_label("Which skills would activate?").fill("Ship the 2.0 release notes")
    page.get_by_role("button", name="Check").click()
    expect(page.locator("main")).to_contain_text("shipping")
    page.screenshot(path=screenshots / "skills.png", full_page=True)

    with page.expect_download() as download:
        page.get_by_role("link", name="Export all (JSON)").click()
    exported = tmp_path / "skills.json"
    download.value.save_as(exported)
    Skill.objects.filter(name="shipping").delete()
    page.goto("/skills/import/")
    page.get_by_label("File").set_input_files(str(exported))
    page.get_by_role("button", name="Import").click()
    skill = Skill.objects.get(name="shipping")
    assert skill.triggers == ["ship", "release notes"]
    assert [tool.name for tool in skill.tools.all()] == ["announce"]


def test_the_tools_field_says_what_is_wrong_as_it_is_typed_and_inserts_the_example(
    log_in: Any,
) -> None:
    sam = User.objects.create_user("sam", "sam@example.com", PASSWORD, is_staff=True)
    page: Page = log_in(sam)
    page.goto("/skills/new/")
    tools, said = page.get_by_label("Tools (JSON)"), page.locator("#id_tools_check")
    tools.fill('[{"name": "announce",}]')
    expect(said).to_contain_text("Not valid JSON")
    expect(said).to_contain_text("line 1, column")
    expect(tools).to_have_attribute("aria-invalid", "true")
    tools.fill(json.dumps([{**TOOL, "executor": {"kind": "shell", "command": "make"}}]))
    expect(said).to_have_text("tools[0].executor: `kind` must be one of command, http, prompt")

    tools.fill("")
    page.get_by_role("button", name="Insert the example tool").click()
    expect(said).to_contain_text("1 tool(s): run_lint.")
    page.get_by_label("Name").fill("linting")
    page.get_by_role("button", name="Save skill").click()
    page.wait_for_url("**/skills/")
    assert [tool.name for tool in Skill.objects.get(name="linting").tools.all()] == ["run_lint"]
