"""The skill pages: list, "which would activate?", the form (and its field errors),
enable/disable, delete, export/import round trip, and who may write."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tools_app.models import Skill
from tools_app.services import skills as services

pytestmark = pytest.mark.django_db

TOOLS = [
    {
        "name": "deploy_staging",
        "description": "Deploy to staging",
        "inputSchema": {"type": "object", "properties": {"version": {"type": "string"}}},
        "executor": {"kind": "prompt", "template": "Deploying $version."},
    }
]
DEPLOY: dict[str, Any] = {
    "name": "deploy",
    "description": "Deploy the application",
    "triggers": "deploy\nrelease, ship",
    "instructions": "Deploy with care.",
    "enabled": "on",
    "tools": json.dumps(TOOLS),
}


def browser(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def sam(superuser: User) -> Client:
    return browser(superuser)


@pytest.fixture
def deploy(superuser: User) -> Skill:
    data = {**DEPLOY, "triggers": ["deploy", "release", "ship"], "tools": TOOLS, "enabled": True}
    return services.skill_create(data=data, user=superuser)


def test_the_list_shows_each_skill_and_says_when_one_never_activates(
    sam: Client, deploy: Skill
) -> None:
    services.skill_create(data={"name": "notes", "description": "Take notes"})
    page = sam.get("/skills/").content.decode()
    assert 'id="skill-deploy"' in page
    assert "<code>ship</code>" in page and "<code>deploy_staging</code>" in page
    assert "No triggers: this skill never activates." in page
    assert 'href="/skills/deploy/edit/"' in page
    assert 'href="/skills/"' in page  # the nav link


def test_which_skills_would_activate(sam: Client, deploy: Skill) -> None:
    page = sam.get("/skills/", {"task": "Ship it!"}).content.decode()
    assert "<strong>deploy</strong>: matched <code>ship</code>" in page
    none = sam.get("/skills/", {"task": "fix the relationship"}).content.decode()
    assert "No enabled skill would activate" in none
    assert Skill.objects.get(name="deploy").times_activated == 0  # asking counts nothing


def test_create_a_valid_skill(sam: Client) -> None:
    answer = sam.post("/skills/new/", DEPLOY)
    assert answer.status_code == 302 and answer["Location"] == "/skills/"
    skill = Skill.objects.get(name="deploy")
    assert skill.triggers == ["deploy", "release", "ship"]
    assert skill.enabled and skill.instructions == "Deploy with care."
    tool = skill.tools.get()
    assert tool.name == "deploy_staging" and tool.executor["kind"] == "prompt"


def test_a_bad_schema_is_an_error_on_the_tools_field_and_nothing_is_saved(sam: Client) -> None:
    bad = [{**TOOLS[0], "inputSchema": {"type": "objekt"}}]
    answer = sam.post("/skills/new/", {**DEPLOY, "tools": json.dumps(bad)})
    assert answer.status_code == 200
    form = answer.context["form"]
    assert "tools" in form.errors and "inputSchema" in form.errors["tools"][0]
    assert 'id="id_tools_error"' in answer.content.decode()
    assert not Skill.objects.filter(name="deploy").exists()


def test_a_template_with_unfilled_placeholders_is_an_error_on_the_tools_field(sam: Client) -> None:
    bad = [{**TOOLS[0], "executor": {"kind": "prompt", "template": "Deploying {version}."}}]
    answer = sam.post("/skills/new/", {**DEPLOY, "tools": json.dumps(bad)})
    assert answer.status_code == 200
    error = answer.context["form"].errors["tools"][0]
    assert "tools[0].executor.template" in error and "never be filled: {version}" in error
    assert not Skill.objects.filter(name="deploy").exists()


def test_tools_that_are_not_json_and_a_taken_name_are_field_errors(
    sam: Client, deploy: Skill
) -> None:
    before = Skill.objects.count()
    answer = sam.post("/skills/new/", {**DEPLOY, "name": "other", "tools": "[{"})
    assert "tools is not valid JSON: Expecting" in answer.context["form"].errors["tools"][0]
    assert "line 1 column 3" in answer.context["form"].errors["tools"][0]
    taken = sam.post("/skills/new/", {**DEPLOY, "tools": "[]"})
    assert "already a skill named" in taken.context["form"].errors["name"][0]
    core = [{"name": "read_file", "inputSchema": {"type": "object"}}]
    shadow = sam.post("/skills/new/", {**DEPLOY, "name": "x", "tools": json.dumps(core)})
    assert "tools" in shadow.context["form"].errors
    assert Skill.objects.count() == before


def test_tools_that_are_not_a_list_are_named_so_and_nothing_is_saved(sam: Client) -> None:
    answer = sam.post("/skills/new/", {**DEPLOY, "tools": json.dumps(TOOLS[0])})
    error = answer.context["form"].errors["tools"][0]
    assert error == "tools must be a JSON list [ … ] of tools, not an object { … }."
    assert not Skill.objects.filter(name="deploy").exists()


def test_the_form_shows_an_example_tool_that_saves_as_it_is(sam: Client) -> None:
    page = sam.get("/skills/new/").content.decode()
    shown = re.search(r'<pre id="example-tool">(.*?)</pre>', page, re.S)
    assert shown is not None
    example = json.loads(html.unescape(shown[1]))
    assert example["executor"]["kind"] == "command"
    assert 'data-executor-kinds="command http prompt"' in page
    assert "/static/agentweb/skill_tools.js" in page
    answer = sam.post("/skills/new/", {**DEPLOY, "tools": json.dumps([example])})
    assert answer.status_code == 302, answer.context["form"].errors
    assert Skill.objects.get(name="deploy").tools.get().name == example["name"]


def test_edit_shows_the_skill_and_saves_it(sam: Client, deploy: Skill) -> None:
    form = sam.get("/skills/deploy/edit/").context["form"]
    assert form.initial["triggers"] == "deploy\nrelease\nship"
    assert json.loads(form.initial["tools"])[0]["name"] == "deploy_staging"
    changed = {**DEPLOY, "name": "deploy2", "triggers": "roll out", "tools": "[]"}
    answer = sam.post("/skills/deploy/edit/", changed)
    assert answer.status_code == 302
    skill = Skill.objects.get(name="deploy2")
    assert skill.triggers == ["roll out"] and not skill.tools.exists()
    assert sam.get("/skills/nope/edit/").status_code == 404


def test_enable_disable_and_delete(sam: Client, deploy: Skill) -> None:
    assert sam.post("/skills/deploy/enabled/", {"enabled": "0"}).status_code == 302
    assert not Skill.objects.get(name="deploy").enabled
    page = sam.get("/skills/").content.decode()
    assert "Enable<span" in page
    sam.post("/skills/deploy/enabled/", {"enabled": "1"})
    assert Skill.objects.get(name="deploy").enabled
    assert sam.post("/skills/deploy/delete/").status_code == 302
    assert not Skill.objects.filter(name="deploy").exists()
    assert sam.post("/skills/deploy/delete/").status_code == 404


def test_export_then_import_round_trips(sam: Client, deploy: Skill) -> None:
    answer = sam.get("/skills/export/")
    assert answer["Content-Disposition"] == 'attachment; filename="skills.json"'
    exported = json.loads(answer.content)
    Skill.objects.all().delete()
    upload = SimpleUploadedFile("skills.json", answer.content, "application/json")
    assert sam.post("/skills/import/", {"file": upload}).status_code == 302
    assert json.loads(sam.get("/skills/export/").content) == exported


def test_import_pasted_skill_md_and_refusals(sam: Client) -> None:
    text = "---\nname: review\ndescription: Review code\n---\nRead the diff first.\n"
    answer = sam.post("/skills/import/", {"text": text}, follow=True)
    assert "never activates" in answer.content.decode()
    skill = Skill.objects.get(name="review")
    assert skill.instructions == "Read the diff first." and skill.triggers == []
    bad = sam.post("/skills/import/", {"text": json.dumps({"name": "a b"})})
    assert bad.status_code == 200 and bad.context["form"].non_field_errors()
    assert sam.post("/skills/import/", {"text": "{"}).context["form"].errors
    assert sam.post("/skills/import/", {}).context["form"].errors


def test_a_non_writer_reads_without_buttons_and_is_refused_every_write(
    reviewer: User, deploy: Skill
) -> None:
    rita = browser(reviewer)
    page = rita.get("/skills/").content.decode()
    assert "deploy" in page and "/skills/deploy/edit/" not in page
    assert "Disable" not in page and "Delete" not in page and "New skill" not in page
    assert rita.get("/skills/export/").status_code == 200
    assert rita.post("/skills/new/", {**DEPLOY, "name": "x"}).status_code == 403
    assert rita.post("/skills/deploy/edit/", DEPLOY).status_code == 403
    assert rita.post("/skills/deploy/enabled/", {"enabled": "0"}).status_code == 403
    assert rita.post("/skills/deploy/delete/").status_code == 403
    assert rita.post("/skills/import/", {"text": "[]"}).status_code == 403
    assert Skill.objects.get(name="deploy").enabled and not Skill.objects.filter(name="x")


def test_anonymous_visitors_are_sent_to_log_in(deploy: Skill) -> None:
    for url in ("/skills/", "/skills/new/", "/skills/export/", "/skills/deploy/edit/"):
        answer = Client().get(url)
        assert answer.status_code == 302 and "/login/" in answer["Location"]
    answer = Client().post("/skills/deploy/delete/")
    assert answer.status_code == 302 and Skill.objects.filter(name="deploy").exists()


def test_a_user_with_change_skill_may_write(outsider: User, deploy: Skill) -> None:
    outsider.user_permissions.add(Permission.objects.get(codename="change_skill"))
    charlie = browser(User.objects.get(pk=outsider.pk))
    assert "/skills/deploy/edit/" in charlie.get("/skills/").content.decode()
    assert charlie.post("/skills/deploy/enabled/", {"enabled": "0"}).status_code == 302
