"""Skills over the API and the commands: who may read and write, 422s that name the
field, import/export round trips (JSON and SKILL.md folders), activation recorded on
the session, the tools a session offers, and a call to an inactive skill's tool."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from tests.integration.helpers import Api, call, start_session
from tools_app import services
from tools_app.models import Event, Skill, ToolCall

pytestmark = [pytest.mark.django_db(transaction=True, serialized_rollback=True), pytest.mark.eager]

DEPLOY: dict[str, Any] = {
    "name": "deploy",
    "description": "Deploy the application",
    "triggers": ["deploy", "release", "ship"],
    "instructions": "Deploy with care.",
    "tools": [
        {
            "name": "deploy_staging",
            "description": "Deploy to staging environment",
            "inputSchema": {"type": "object", "properties": {"version": {"type": "string"}}},
            "executor": {"kind": "prompt", "template": "Deploying $version to staging."},
        }
    ],
}


@pytest.fixture
def sam_api(superuser: User) -> Api:
    """Sam is staff: a review token writes skills."""
    return Api(services.api_token_create(user=superuser, scope="review"))


def put(api: Api, path: str, body: object) -> Any:
    return api.client.put(
        f"/api{path}", json.dumps(body), content_type="application/json", headers=api.headers
    )


def delete(api: Api, path: str) -> Any:
    return api.client.delete(f"/api{path}", headers=api.headers)


def test_staff_write_skills_and_anyone_logged_in_reads_them(
    sam_api: Api, charlie: Api, alice: Api
) -> None:
    assert charlie.post("/skills", DEPLOY).status_code == 403
    assert alice.post("/skills", DEPLOY).status_code == 403
    created = sam_api.post("/skills", DEPLOY)
    assert created.status_code == 201, created.content
    assert created.json()["items"][0]["tools"][0]["name"] == "deploy_staging"
    listed = charlie.get("/skills?limit=500").json()["items"]
    assert {"deploy", "lint", "release", "test-writing"} <= {s["name"] for s in listed}
    shown = alice.get("/skills/deploy").json()
    assert (shown["times_activated"], shown["last_used_at"]) == (0, None)
    assert put(charlie, "/skills/deploy", DEPLOY).status_code == 403
    assert delete(charlie, "/skills/deploy").status_code == 403
    assert Api("not-a-token").get("/skills").status_code == 401
    assert alice.get("/skills/nothing").status_code == 404


def test_a_bad_skill_is_a_422_naming_the_field_and_nothing_is_written(sam_api: Api) -> None:
    bad = json.loads(json.dumps(DEPLOY))
    bad["tools"][0]["inputSchema"] = {"type": "object", "properties": {"v": {"type": "nope"}}}
    answer = sam_api.post("/skills", [{"name": "fine", "triggers": ["x"]}, bad])
    assert answer.status_code == 422
    assert answer.json()["field"] == "tools[0].inputSchema"
    assert "skill 1: tools[0].inputSchema: is not a valid JSON Schema" in answer.json()["detail"]
    assert not Skill.objects.filter(name__in=["fine", "deploy"]).exists()
    shadow = {"name": "evil", "tools": [{"name": "run_command"}]}
    answer = sam_api.post("/skills", shadow)
    assert answer.status_code == 422 and "may not shadow" in answer.json()["detail"]
    assert sam_api.post("/skills", "[1,").status_code == 400
    sam_api.post("/skills", DEPLOY)
    taken = {"name": "other", "tools": [{"name": "deploy_staging"}]}
    answer = sam_api.post("/skills", taken)
    assert (
        answer.status_code == 422
        and "already a tool of the skill 'deploy'" in answer.json()["detail"]
    )


def test_a_template_that_would_be_shown_unrendered_is_a_422_naming_its_placeholders(
    sam_api: Api,
) -> None:
    bad = json.loads(json.dumps(DEPLOY))
    bad["tools"][0]["executor"]["template"] = "Deploying v{version} to $stage."
    answer = sam_api.post("/skills", bad)
    assert answer.status_code == 422, answer.content
    assert answer.json()["field"] == "tools[0].executor.template"
    assert "never be filled: $stage, {version}" in answer.json()["detail"]
    assert not Skill.objects.filter(name="deploy").exists()
    assert sam_api.post("/skills", DEPLOY).status_code == 201
    answer = put(sam_api, "/skills/deploy", bad)
    assert answer.status_code == 422 and "{version}" in answer.json()["detail"]
    stored = Skill.objects.get(name="deploy").tools.get().executor
    assert stored["template"] == "Deploying $version to staging."


def test_import_skills_refuses_a_template_that_would_be_shown_unrendered(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(DEPLOY))
    bad["tools"][0]["executor"]["template"] = "Deploying {{version}}."
    path = tmp_path / "skills.json"
    path.write_text(json.dumps([{"name": "fine", "triggers": ["x"]}, bad]))
    with pytest.raises(
        CommandError, match=r"skill 1: tools\[0\]\.executor\.template: .*\{\{version\}\}"
    ):
        call_command("import_skills", str(path))
    assert not Skill.objects.filter(name__in=["fine", "deploy"]).exists()


def test_put_replaces_and_renames_and_delete_keeps_past_calls(
    sam_api: Api, alice: Api, rita: Api, workspace: Path
) -> None:
    sam_api.post("/skills", DEPLOY)
    session = start_session(alice, workspace, task="Ship version 2")
    made = call(alice, session, "deploy_staging", wait=0.01, version="2")
    assert made["status"] == "awaiting_approval"
    changed = {**DEPLOY, "name": "shipit", "triggers": ["ship it"]}
    answer = put(sam_api, "/skills/deploy", changed)
    assert answer.status_code == 200 and answer.json()["name"] == "shipit"
    assert put(sam_api, "/skills/deploy", changed).status_code == 404
    assert delete(sam_api, "/skills/shipit").status_code == 204
    assert ToolCall.objects.get(pk=made["id"]).tool == "deploy.deploy_staging"
    assert alice.get(f"/tool-calls/{made['id']}").status_code == 200


def test_a_matching_task_activates_the_skill_and_offers_its_tools(
    sam_api: Api, alice: Api, rita: Api, workspace: Path
) -> None:
    sam_api.post("/skills", DEPLOY)
    matched = alice.post("/skills/match", {"task": "Ship it: the release is due"}).json()
    assert {"skill": "deploy", "words": ["release", "ship"]} in matched["skills"]
    assert Skill.objects.get(name="deploy").times_activated == 0  # asking counts nothing
    session = start_session(alice, workspace, task="Ship it: the release is due")
    assert {"skill": "deploy", "words": ["release", "ship"]} in session["active_skills"]
    created = Event.objects.get(session_id=session["id"], type="session.created")
    assert created.data["skills"] == session["active_skills"]
    assert Skill.objects.get(name="deploy").times_activated == 1
    for fmt, key in (("json", "name"), ("anthropic", "name"), ("openai", "function")):
        tools = alice.get(f"/sessions/{session['id']}/tools?format={fmt}").json()
        names = [t[key]["name"] if fmt == "openai" else t[key] for t in tools]
        assert len(names) >= 16 and "deploy_staging" in names and "run_command" in names
    made = call(alice, session, "deploy_staging", wait=0.01, version="2.0")
    assert made["tool"] == "deploy.deploy_staging"
    assert (made["status"], made["rule"]) == ("awaiting_approval", "builtin:skill-tool")
    assert made["preview"]["text"] == "Deploying 2.0 to staging."
    bad = call(alice, session, "deploy_staging", version=2)
    assert bad["status"] == "failed" and "`version`: 2 is not of type 'string'" in bad["result"]
    rita.post(f"/tool-calls/{made['id']}/decision", {"decision": "approve"})
    done = alice.get(f"/tool-calls/{made['id']}?wait=20").json()
    assert (done["status"], done["result"]) == ("succeeded", "Deploying 2.0 to staging.")
    assert Skill.objects.get(name="deploy").last_used_at is not None


def test_a_tool_of_a_skill_that_is_not_active_is_refused(
    sam_api: Api, alice: Api, workspace: Path
) -> None:
    sam_api.post("/skills", DEPLOY)
    session = start_session(alice, workspace, task="fix the bug")
    assert session["active_skills"] == []
    tools = alice.get(f"/sessions/{session['id']}/tools").json()
    assert "deploy_staging" not in [tool["name"] for tool in tools]
    for name in ("deploy_staging", "deploy.deploy_staging"):
        refused = call(alice, session, name, version="1")
        assert refused["status"] == "failed"
        assert (
            "belongs to the skill 'deploy', which is not active for this session"
            in (refused["result"])
        )


def test_import_and_export_round_trip_the_reference_format(tmp_path: Path) -> None:
    seed = {key: DEPLOY[key] for key in ("name", "description", "triggers")}
    seed["tools"] = [{k: v for k, v in DEPLOY["tools"][0].items() if k != "executor"}]
    path = tmp_path / "skills.json"
    path.write_text(json.dumps([seed, {**DEPLOY, "name": "deploy2", "tools": []}]))
    out = StringIO()
    call_command("import_skills", str(path), stdout=out)
    assert "Imported 2 skill(s): deploy, deploy2." in out.getvalue()
    out = StringIO()
    call_command("export_skills", "deploy", stdout=out)
    exported = json.loads(out.getvalue())
    assert {k: exported[k] for k in seed} == seed
    path.write_text(out.getvalue())
    call_command("import_skills", str(path), stdout=StringIO())  # replaces, unchanged
    again = StringIO()
    call_command("export_skills", "deploy", stdout=again)
    assert json.loads(again.getvalue()) == exported
    out = StringIO()
    call_command("export_skills", stdout=out)
    assert {"deploy", "deploy2", "lint"} <= {s["name"] for s in json.loads(out.getvalue())}


def test_a_bad_file_is_a_command_error_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([DEPLOY, {"name": "x", "tools": [{"name": "t", "executor": 1}]}]))
    with pytest.raises(CommandError, match=r"skill 1: tools\[0\]\.executor"):
        call_command("import_skills", str(path))
    assert not Skill.objects.filter(name="deploy").exists()
    path.write_text("{not json")
    with pytest.raises(CommandError, match="not a JSON skill file"):
        call_command("import_skills", str(path))
    with pytest.raises(CommandError, match="no skill named 'ghost'"):
        call_command("export_skills", "ghost")


def test_an_agent_skills_folder_imports_and_says_which_never_activate(tmp_path: Path) -> None:
    (tmp_path / "pdf").mkdir()
    (tmp_path / "pdf" / "SKILL.md").write_text(
        "---\nname: pdf\ndescription: Fill PDF forms\n---\n# PDF forms\n\nUse pdftk.\n"
    )
    (tmp_path / "review").mkdir()
    (tmp_path / "review" / "SKILL.md").write_text(
        "---\nname: review\ndescription: Review code\n"
        "triggers: code review, review\n---\nBe kind.\n"
    )
    out = StringIO()
    call_command("import_skills", str(tmp_path), stdout=out)
    assert "Imported 2 skill(s): pdf, review." in out.getvalue()
    assert "pdf: no triggers, so it never activates" in out.getvalue()
    pdf = Skill.objects.get(name="pdf")
    assert (pdf.description, pdf.instructions, pdf.triggers) == (
        "Fill PDF forms",
        "# PDF forms\n\nUse pdftk.",
        [],
    )
    assert Skill.objects.get(name="review").triggers == ["code review", "review"]
    call_command("import_skills", str(tmp_path / "pdf"), stdout=StringIO())  # one folder
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match=r"holds no SKILL\.md"):
        call_command("import_skills", str(tmp_path / "empty"))


def test_edited_arguments_are_checked_against_the_definition_the_reviewer_saw(
    sam_api: Api, alice: Api, rita: Api, workspace: Path
) -> None:
    sam_api.post("/skills", DEPLOY)
    session = start_session(alice, workspace, task="deploy version 1")
    made = call(alice, session, "deploy_staging", wait=0.01, version="1")
    template = {"kind": "prompt", "template": "Something else: $version"}
    Skill.objects.get(name="deploy").tools.update(executor=template)
    path = f"/tool-calls/{made['id']}/decision"
    bad = rita.post(path, {"decision": "approve", "args": {"version": 1}})
    assert bad.status_code == 422 and "`version`: 1 is not of type 'string'" in bad.json()["detail"]
    rita.post(path, {"decision": "approve", "args": {"version": "1.1"}})
    done = alice.get(f"/tool-calls/{made['id']}?wait=20").json()
    assert (done["status"], done["result"]) == ("succeeded", "Deploying 1.1 to staging.")
