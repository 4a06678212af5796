"""The registry: names, argument validation a model can act on, JSON Schemas."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools_app.core.tools.base import ToolContext
from tools_app.core.tools.catalogue import CATALOGUE, EFFECT_TOOL, READ_ONLY_TOOLS, facts_for
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.files import ReadFileArgs
from tools_app.core.tools.registry import REGISTRY, core_tool_schemas, get_tool, validate_args
from tools_app.core.tools.shell import RunCommandArgs

CORE = {
    "read_file",
    "write_file",
    "edit_file",
    "run_command",
    "search_codebase",
    "list_files",
    "task_done",
    "git_status",
    "git_diff",
    "git_commit",
    "git_log",
    "git_branch",
    "create_pull_request",
    "spawn_subagent",
    "web_fetch",
}


def test_registry_holds_all_fifteen_core_tools_of_the_reference() -> None:
    assert set(REGISTRY) == CORE
    assert len(REGISTRY) == 15


def test_unknown_tool_lists_the_available_ones() -> None:
    with pytest.raises(ToolError, match=r"Unknown tool 'x'\. Available tools: read_file"):
        get_tool("x")


def test_valid_arguments_give_the_model() -> None:
    args = validate_args("read_file", {"path": "a.txt", "offset": 3})
    assert isinstance(args, ReadFileArgs)
    assert (args.path, args.offset, args.limit) == ("a.txt", 3, None)


def test_a_bad_type_names_the_argument_and_the_value() -> None:
    with pytest.raises(ToolError, match=r"`offset` must be a positive integer \(got 'abc'\)"):
        validate_args("read_file", {"path": "a", "offset": "abc"})


def test_zero_offset_is_not_a_positive_integer() -> None:
    with pytest.raises(ToolError, match=r"`offset` must be a positive integer \(got 0\)"):
        validate_args("read_file", {"path": "a", "offset": 0})


def test_missing_argument_is_named() -> None:
    with pytest.raises(ToolError, match="missing required argument `path`"):
        validate_args("read_file", {})


def test_unexpected_argument_lists_the_accepted_ones() -> None:
    with pytest.raises(
        ToolError, match="unexpected argument `foo`; read_file accepts: path, offset, limit"
    ):
        validate_args("read_file", {"path": "a", "foo": 1})


def test_every_bad_argument_is_reported_at_once() -> None:
    with pytest.raises(ToolError) as caught:
        validate_args("search_codebase", {"pattern": 3, "max_results": -1})
    assert "`pattern` must be a non-empty string (got 3)" in str(caught.value)
    assert "`max_results` must be a positive integer (got -1)" in str(caught.value)


def test_arguments_that_are_not_an_object_are_refused() -> None:
    with pytest.raises(ToolError, match="must be a JSON object"):
        validate_args("read_file", ["a.txt"])


def test_list_items_are_checked_one_by_one() -> None:
    with pytest.raises(ToolError, match=r"`files_changed\[1\]` input should be a valid string"):
        validate_args("task_done", {"summary": "ok", "files_changed": ["a", 3]})


def test_timeout_accepts_integers_but_not_booleans_or_huge_values() -> None:
    args = validate_args("run_command", {"command": "true", "timeout": 5})
    assert isinstance(args, RunCommandArgs) and args.timeout == 5.0
    with pytest.raises(ToolError, match="`timeout` must be a positive number, at most 3600"):
        validate_args("run_command", {"command": "true", "timeout": True})
    with pytest.raises(ToolError, match="at most 3600"):
        validate_args("run_command", {"command": "true", "timeout": 4000})


def test_schemas_use_the_reference_parameter_names_with_descriptions() -> None:
    schemas = {s["name"]: s for s in core_tool_schemas()}
    assert set(schemas) == CORE
    expected = {
        "read_file": ({"path", "offset", "limit"}, ["path"]),
        "write_file": ({"path", "content"}, ["path", "content"]),
        "edit_file": ({"path", "old_string", "new_string"}, ["path", "old_string", "new_string"]),
        "run_command": ({"command", "timeout"}, ["command"]),
        "search_codebase": ({"pattern", "path", "include", "max_results"}, ["pattern"]),
        "list_files": ({"path", "recursive", "pattern"}, ["path"]),
        "task_done": ({"summary", "files_changed"}, ["summary"]),
        "git_status": (set(), []),
        "git_diff": ({"staged"}, []),
        "git_commit": ({"message", "files"}, ["message"]),
        "git_log": ({"count", "oneline"}, []),
        "git_branch": ({"action", "name"}, ["action"]),
        "create_pull_request": ({"title", "body", "base", "draft"}, ["title"]),
        "spawn_subagent": ({"title", "description", "modelRole"}, ["title", "description"]),
    }
    for name, (props, required) in expected.items():
        schema = schemas[name]["input_schema"]
        assert set(schema.get("properties", {})) == props, name
        assert schema.get("required", []) == required, name
        assert schema["additionalProperties"] is False
        assert all(p.get("description") for p in schema.get("properties", {}).values()), name
        assert schemas[name]["description"]


def test_optional_arguments_have_a_plain_type_in_the_schema() -> None:
    props = REGISTRY["read_file"].json_schema()["properties"]
    assert props["offset"] == {
        "description": props["offset"]["description"],
        "minimum": 1,
        "title": "Offset",
        "type": "integer",
    }
    assert REGISTRY["run_command"].json_schema()["properties"]["timeout"]["default"] == 120


def test_read_only_tools_are_flagged() -> None:
    read_only = {name for name, spec in REGISTRY.items() if spec.facts.read_only is True}
    assert read_only == READ_ONLY_TOOLS == {
        "read_file", "search_codebase", "list_files",
        "git_status", "git_diff", "git_log",
    }  # fmt: skip


def test_git_branch_only_reads_when_it_lists() -> None:
    facts = REGISTRY["git_branch"].facts
    assert facts.reads_only({"action": "list"})
    assert not facts.reads_only({"action": "create", "name": "x"})


def test_the_registry_and_the_catalogue_name_the_same_tools() -> None:
    assert set(REGISTRY) == set(CATALOGUE)
    assert all(spec.facts is CATALOGUE[name] for name, spec in REGISTRY.items())


def test_the_internal_effect_tool_is_not_registered() -> None:
    with pytest.raises(ToolError, match="Unknown tool"):
        get_tool("apply_command_effect")
    assert EFFECT_TOOL == "apply_command_effect" and EFFECT_TOOL not in CATALOGUE


def test_the_effect_tool_has_facts_yet_is_treated_like_an_unknown_tool() -> None:
    """Its card shows a diff; otherwise it changes anything and must never run twice."""
    facts = facts_for(EFFECT_TOOL)
    assert facts.shows_diff
    assert (facts.writes, facts.rerunnable, facts.cache) == ("anything", False, None)
    assert not facts.reads_only({})


def test_each_tool_owns_what_its_approvals_card_shows() -> None:
    """Which argument a reviewer edits, which previews are diffs, which name a host."""
    edit = {name: f.edit_field for name, f in CATALOGUE.items() if f.edit_field}
    assert edit == {"write_file": "content", "edit_file": "new_string"}
    diffs = {name for name, f in CATALOGUE.items() if f.shows_diff}
    assert diffs == {"write_file", "edit_file", "git_commit"}
    assert {name for name, f in CATALOGUE.items() if f.shows_host} == {"web_fetch"}
    unknown = facts_for("deploy.ship")
    assert (unknown.edit_field, unknown.shows_diff, unknown.shows_host) == (None, False, False)


def test_git_defaults_follow_the_reference() -> None:
    props = {name: REGISTRY[name].json_schema()["properties"] for name in REGISTRY}
    assert props["git_diff"]["staged"]["default"] is False
    assert (props["git_log"]["count"]["default"], props["git_log"]["oneline"]["default"]) == (
        10, True,
    )  # fmt: skip
    assert props["git_branch"]["action"]["enum"] == ["create", "switch", "list"]
    pr = props["create_pull_request"]
    assert (pr["body"]["default"], pr["base"]["default"], pr["draft"]["default"]) == (
        "", "main", False,
    )  # fmt: skip
    assert props["spawn_subagent"]["modelRole"]["enum"] == ["fast", "coder", "architect"]


def test_spawn_subagent_says_it_needs_a_runtime(tmp_path: Path) -> None:
    args = validate_args("spawn_subagent", {"title": "t", "description": "d"})
    with pytest.raises(ToolError, match="needs an agent runtime with a model"):
        get_tool("spawn_subagent").run(ToolContext(workspace=tmp_path), args)
