"""The skill file format, its checks (each naming the field), argument validation,
previews and the policy's view of skill tools: pure, no database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools_app.core.engine import prepare
from tools_app.core.policy.types import PolicySpec, Rule, SessionCounters
from tools_app.core.skills.arguments import validate_arguments
from tools_app.core.skills.definitions import SkillInvalid, skill_from_dict, skill_to_dict
from tools_app.core.skills.executors import SkillCall, argument_env, preview, render_prompt
from tools_app.core.skills.skillmd import skill_dict_from_markdown
from tools_app.core.skills.tool_spec import skill_tool_spec
from tools_app.core.tools.base import ToolContext
from tools_app.core.tools.errors import ToolError

SEED = {
    "name": "deploy",
    "description": "Deploy the application",
    "triggers": ["deploy", "release", "ship"],
    "tools": [
        {
            "name": "deploy_staging",
            "description": "Deploy to staging environment",
            "inputSchema": {"type": "object", "properties": {"version": {"type": "string"}}},
        }
    ],
}
CORE = frozenset({"run_command", "read_file"})


def problem(data: dict[str, Any]) -> SkillInvalid:
    with pytest.raises(SkillInvalid) as caught:
        skill_from_dict(data, core_tools=CORE)
    return caught.value


def with_tool(**tool: Any) -> dict[str, Any]:
    return {"name": "s", "triggers": ["x"], "tools": [{"name": "t", **tool}]}


def test_the_seed_example_reads_and_round_trips() -> None:
    skill = skill_from_dict(SEED, core_tools=CORE)
    assert skill.tool_names() == ["deploy.deploy_staging"]
    again = skill_to_dict(skill)
    assert skill_from_dict(again, core_tools=CORE) == skill
    assert again["tools"][0]["inputSchema"] == SEED["tools"][0]["inputSchema"]
    assert "executor" not in again["tools"][0]  # none given: none exported


def test_a_bad_input_schema_names_the_field() -> None:
    found = problem(with_tool(inputSchema={"type": "object", "properties": {"a": {"type": 5}}}))
    assert found.field == "tools[0].inputSchema"
    assert "not a valid JSON Schema" in str(found)
    found = problem(with_tool(inputSchema={"type": "string"}))
    assert found.field == "tools[0].inputSchema" and '"type": "object"' in found.message
    assert problem(with_tool(inputSchema=[1])).field == "tools[0].inputSchema"


@pytest.mark.parametrize(
    ("executor", "words"),
    [
        ({"kind": "shell", "command": "x"}, "`kind` must be one of"),
        ({"kind": "command"}, "`command` must be a non-empty string"),
        ({"kind": "command", "command": "x", "timeout": 0}, "more than 0"),
        ({"kind": "http", "url": "ftp://x"}, "http:// or https://"),
        ({"kind": "http", "url": "https://x", "method": "DELETE"}, "`method`"),
        ({"kind": "http", "url": "https://x", "headers": {"A": "s3cret"}}, '{"env": "NAME"}'),
        ({"kind": "http", "url": "https://x", "headers": {"A": {"env": "1 x"}}}, "variable name"),
        ({"kind": "prompt"}, "`template` must be a string"),
        ({"kind": "prompt", "template": "x", "extra": 1}, "`template` only"),
    ],
)
def test_a_bad_executor_names_the_field(executor: dict[str, Any], words: str) -> None:
    found = problem(with_tool(executor=executor))
    assert found.field == "tools[0].executor"
    assert words in found.message


def test_names_are_checked() -> None:
    assert problem(with_tool() | {"name": "Bad Name"}).field == "name"
    assert problem({"name": "s", "tools": [{"name": "run_command"}]}).message.endswith(
        "a skill may not shadow it"
    )
    assert problem({"name": "s", "tools": [{"name": "a.b"}]}).field == "tools[0].name"
    assert problem({"name": "s", "tools": [{"name": "t"}, {"name": "t"}]}).field == (
        "tools[1].name"
    )
    assert problem({"name": "s", "triggers": "ship"}).field == "triggers"
    assert problem({"name": "s", "colour": "red"}).message.startswith("unknown key 'colour'")


SCHEMA = {
    "type": "object",
    "properties": {
        "version": {"type": "string"},
        "count": {"type": "integer", "minimum": 1},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["version"],
    "additionalProperties": False,
}


def test_arguments_are_checked_against_the_schema_naming_each_argument() -> None:
    assert validate_arguments("d.t", SCHEMA, {"version": "1.2"}) == {"version": "1.2"}
    with pytest.raises(ToolError) as caught:
        validate_arguments("d.t", SCHEMA, {"count": 0, "tags": ["a", 3], "other": 1})
    text = str(caught.value)
    assert text.startswith("Invalid arguments for d.t: ")
    assert "missing required argument 'version'" in text
    assert "`count`: 0 is less than the minimum of 1" in text
    assert "`tags[1]`: 3 is not of type 'string'" in text
    assert "'other' was unexpected" in text
    with pytest.raises(ToolError, match="must be a JSON object"):
        validate_arguments("d.t", SCHEMA, ["1.2"])


def test_a_prompt_renders_arguments_without_attribute_access() -> None:
    template = "v$version ${version}: $missing {version.__class__} $$"
    assert render_prompt(template, {"version": "1.0"}) == "v1.0 1.0: $missing {version.__class__} $"
    assert render_prompt("$n", {"n": [1, 2]}) == "[1, 2]"


def prompt_tool(template: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"version": {"type": "string"}}}
    return with_tool(inputSchema=schema, executor={"kind": "prompt", "template": template})


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ("Release v{version} now.", "{version}"),
        ("Release {{ version }} now.", "{{ version }}"),
        ("Release %(version)s now.", "%(version)s"),
        ("Release $version to $target.", "$target"),
        ("Release ${channel}.", "$channel"),
    ],
)
def test_a_template_with_placeholders_that_are_never_filled_is_refused_naming_them(
    template: str, named: str
) -> None:
    error = problem(prompt_tool(template))
    assert error.field == "tools[0].executor.template"
    assert f"would never be filled: {named}" in error.message
    assert "$name or ${name}" in error.message and "properties: version" in error.message


def test_a_template_of_arguments_literal_dollars_and_json_braces_is_accepted() -> None:
    template = 'Release $version (${version}) for $$5; send {"tag": "$version"} { as is }.'
    skill = skill_from_dict(prompt_tool(template), core_tools=CORE)
    assert skill.tools[0].executor["template"] == template


def test_an_optional_argument_left_out_renders_as_empty_text() -> None:
    schema = {"type": "object", "properties": {"version": {}, "note": {}}}
    assert render_prompt("v$version;$note.", {"version": "2"}, schema) == "v2;."


def test_arguments_become_environment_variables_by_name() -> None:
    env = argument_env({"version": "1; rm -rf /", "dry-run": True, "n": 2})
    assert env == {
        "AGENTWEB_ARG_VERSION": "1; rm -rf /",
        "AGENTWEB_ARG_DRY_RUN": "true",
        "AGENTWEB_ARG_N": "2",
    }


def test_the_preview_shows_the_executor_and_exactly_what_it_gets() -> None:
    command = SkillCall("d", "t", {"kind": "command", "command": "make deploy"}, SCHEMA)
    shown = preview(command, {"version": "1.2"})
    assert (shown["command"], shown["stdin"]) == ("make deploy", '{"version": "1.2"}')
    assert shown["definition"] == command.as_dict()
    headers = {"Authorization": {"env": "DEPLOY_TOKEN"}}
    http = SkillCall("d", "t", {"kind": "http", "url": "https://h/x", "headers": headers}, SCHEMA)
    shown = preview(http, {"version": "1.2"})
    assert (shown["method"], shown["url"], shown["body"]) == (
        "POST",
        "https://h/x",
        '{"version": "1.2"}',
    )
    assert shown["headers"] == {"Authorization": "from DEPLOY_TOKEN"}
    assert SkillCall.from_dict(shown["definition"]) == http


def judge(call: SkillCall, policy: PolicySpec, args: object) -> Any:
    spec = skill_tool_spec(call)
    return prepare(policy, spec, args, ToolContext(workspace=Path("/tmp")), SessionCounters())


PROMPT = SkillCall("release", "changelog_entry", {"kind": "prompt", "template": "$v"}, SCHEMA)


def test_a_skill_tool_needs_a_person_unless_a_rule_allows_it_by_name() -> None:
    prepared = judge(PROMPT, PolicySpec(), {"version": "1"})
    assert prepared.status == "awaiting_approval"
    assert prepared.verdict.reason.startswith("skill tool")
    assert prepared.verdict.rule == "builtin:skill-tool"
    for pattern in ("release.changelog_entry", "release.*", "*.changelog_entry"):
        rules = (Rule("1", pattern, {}, "allow"),)
        assert judge(PROMPT, PolicySpec(rules=rules), {"version": "1"}).status == "approved"
    denied = PolicySpec(rules=(Rule("2", "release.*", {"version": "9*"}, "deny"),))
    assert judge(PROMPT, denied, {"version": "9.0"}).status == "denied"
    assert judge(PROMPT, denied, {"version": 9}).status == "failed"  # bad arguments first


def test_an_http_tool_reaches_only_allow_listed_public_hosts() -> None:
    def http(url: str) -> SkillCall:
        return SkillCall("hook", "notify", {"kind": "http", "url": url}, {"type": "object"})

    refused = judge(http("http://10.1.2.3/hook"), PolicySpec(), {})
    assert refused.status == "denied" and "does not allow-list" in refused.verdict.reason
    private = PolicySpec(web_write_hosts=("10.1.2.3",))
    refused = judge(http("http://10.1.2.3/hook"), private, {})
    assert refused.status == "denied" and refused.verdict.rule == "builtin:skill-http-target"
    allowed = PolicySpec(web_allow_hosts=("127.0.0.1",))
    assert judge(http("http://127.0.0.1:9/hook"), allowed, {}).status == "awaiting_approval"


def test_a_tool_without_an_executor_fails_clearly() -> None:
    prepared = judge(SkillCall("s", "t", {}, {"type": "object"}), PolicySpec(), {})
    assert prepared.status == "failed" and "has no executor" in prepared.error


def test_a_skill_md_reads_front_matter_and_body() -> None:
    text = (
        "---\nname: pdf\ndescription: Work with PDFs\ntriggers: [pdf, merge pdfs]\n---\n"
        "# PDF\nUse pdftk.\n"
    )
    data = skill_dict_from_markdown(text, "SKILL.md")
    assert data == {
        "name": "pdf",
        "description": "Work with PDFs",
        "triggers": ["pdf", "merge pdfs"],
        "instructions": "# PDF\nUse pdftk.",
    }
    with pytest.raises(SkillInvalid, match="front matter"):
        skill_dict_from_markdown("# no front matter", "SKILL.md")
    with pytest.raises(SkillInvalid, match="needs a `name`"):
        skill_dict_from_markdown("---\ndescription: x\n---\nbody", "SKILL.md")
