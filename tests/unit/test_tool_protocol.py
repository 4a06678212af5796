"""One tool protocol: core, skill and internal tools and spawn_subagent are all specs on
the engine's one road (`engine.prepare`, `engine.execute`), and each fact about a tool
is written once. Pure: no database."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from tools_app.core import engine
from tools_app.core.gateway.gate_mode import Native
from tools_app.core.gateway.judging import native_tool_spec
from tools_app.core.gateway.mapping import map_native
from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.types import (
    VERDICTS,
    CallFacts,
    PolicySpec,
    Rule,
    SessionCounters,
    Verdict,
)
from tools_app.core.skills.executors import SkillCall, preview
from tools_app.core.skills.tool_spec import skill_tool_spec
from tools_app.core.tools import processes
from tools_app.core.tools.base import Judged, ToolContext
from tools_app.core.tools.catalogue import CATALOGUE, EFFECT_TOOL, INTERNAL, facts_for
from tools_app.core.tools.effect_apply import hold_effect
from tools_app.core.tools.effect_reader import read_effect
from tools_app.core.tools.registry import REGISTRY, core_tool_schemas, get_tool, internal_tool
from tools_app.core.tools.shell import RunCommandArgs

APP = Path(__file__).resolve().parents[2] / "tools_app"
SCHEMA = {"type": "object", "properties": {"v": {"type": "string"}}}
PROMPT = SkillCall("release", "note", {"kind": "prompt", "template": "v$v"}, SCHEMA)
COMMAND = SkillCall("lint", "check", {"kind": "command", "command": "true"}, SCHEMA)


def test_a_skill_tool_takes_the_core_tools_road(tmp_path: Path) -> None:
    """Judged by its `skill.tool` name, previewed, and run by the same two functions."""
    spec = skill_tool_spec(PROMPT)
    allow = PolicySpec(rules=(Rule("1", "release.note", {}, "allow"),))
    prepared = engine.prepare(allow, spec, {"v": "2"}, tmp_path, SessionCounters())
    assert (prepared.status, prepared.verdict and prepared.verdict.rule) == ("approved", "rule 1")
    assert prepared.preview == preview(PROMPT, {"v": "2"})
    outcome = engine.execute(spec, prepared.args, ToolContext(workspace=tmp_path))
    assert (outcome.status, outcome.result) == ("succeeded", "v2")


def test_an_agents_own_tool_use_takes_the_same_road_and_runs_on_its_machine(
    tmp_path: Path,
) -> None:
    """A hook's call is a spec too: judged by `engine.prepare` (gate mode has the last
    word) and, were it run, it goes on elsewhere: the agent's machine runs it."""
    native = Native("Bash", {"command": "ls -la"}, str(tmp_path))
    spec = native_tool_spec(map_native(native.tool, native.input, native.cwd), native, PolicySpec())
    prepared = engine.prepare(
        PolicySpec(), spec, {"command": "ls -la"}, tmp_path, SessionCounters()
    )
    assert (prepared.status, prepared.verdict and prepared.verdict.rule) == (
        "approved",
        "gateway:proven",
    )
    assert prepared.preview and prepared.preview["gateway"]["native_tool"] == "Bash"
    outcome = engine.execute(spec, prepared.args, ToolContext(workspace=tmp_path))
    assert outcome.status == "running"


def test_a_specs_judge_has_the_last_word_on_the_verdict(tmp_path: Path) -> None:
    def hold(args: dict[str, object], verdict: Verdict, shown: object) -> Judged:
        return Judged(Verdict("require_approval", "held", "spec:held"), {**args, "v": "x"}, {})

    spec = replace(skill_tool_spec(PROMPT), judge=hold)
    allow = PolicySpec(rules=(Rule("1", "release.note", {}, "allow"),))
    prepared = engine.prepare(allow, spec, {"v": "2"}, tmp_path, SessionCounters())
    assert (prepared.status, prepared.args, prepared.preview) == (
        "awaiting_approval",
        {"v": "x"},
        {},
    )


@pytest.mark.parametrize("verdict", VERDICTS)
def test_a_verdict_means_one_status_for_every_kind_of_tool(verdict: str, tmp_path: Path) -> None:
    """The verdict→status map is the engine's one map: a core tool and a skill tool that
    get the same verdict get the same status."""
    rules = (
        Rule("1", "write_file", {}, verdict),  # type: ignore[arg-type]
        Rule("2", "release.note", {}, verdict),  # type: ignore[arg-type]
    )
    policy, counters = PolicySpec(rules=rules), SessionCounters()
    write = {"path": "a.txt", "content": "a\n"}
    core = engine.prepare(policy, get_tool("write_file"), write, tmp_path, counters)
    skill = engine.prepare(policy, skill_tool_spec(PROMPT), {"v": "1"}, tmp_path, counters)
    assert core.status == skill.status == engine.STATUS_OF_VERDICT[verdict]  # type: ignore[index]


def test_a_skill_without_an_executor_fails_before_the_policy(tmp_path: Path) -> None:
    empty = SkillCall("release", "note", {}, SCHEMA)
    prepared = engine.prepare(
        PolicySpec(), skill_tool_spec(empty), {"v": "1"}, tmp_path, SessionCounters()
    )
    assert (prepared.status, prepared.verdict) == ("failed", None)
    assert prepared.error == "release.note has no executor yet; its skill's author must add one."
    assert prepared.args == {"v": "1"}


def test_what_runs_a_command_is_a_fact_of_its_spec() -> None:
    """The no-sandbox rule follows the spec, not the name run_command."""
    assert get_tool("run_command").facts.runs_command
    assert skill_tool_spec(COMMAND).facts.runs_command
    assert not skill_tool_spec(PROMPT).facts.runs_command
    assert [name for name, f in CATALOGUE.items() if f.runs_command] == ["run_command"]


def test_spawn_subagent_goes_on_elsewhere_through_the_context(tmp_path: Path) -> None:
    started: list[bool] = []
    spec = get_tool("spawn_subagent")
    context = ToolContext(workspace=tmp_path, start_subagent=lambda: started.append(True))
    outcome = engine.execute(spec, {"title": "t", "description": "d"}, context)
    assert (outcome.status, started) == ("running", [True])
    bare = engine.execute(spec, {"title": "t", "description": "d"}, ToolContext(tmp_path))
    assert bare.status == "failed" and "needs an agent runtime" in bare.result


def held(tmp_path: Path) -> tuple[Path, Path, str]:
    """A workspace, a store and the digest of a held effect that writes new.txt."""
    workspace, upper, store = tmp_path / "ws", tmp_path / "upper", tmp_path / "store"
    workspace.mkdir()
    upper.mkdir()
    (upper / "new.txt").write_text("held\n")
    return workspace, store, hold_effect(read_effect(workspace, upper), store).digest()


def test_the_effect_tool_is_an_internal_spec_run_like_any_other(tmp_path: Path) -> None:
    workspace, store, digest = held(tmp_path)
    spec = internal_tool(EFFECT_TOOL)
    assert spec is not None and spec.facts is INTERNAL[EFFECT_TOOL]
    context = ToolContext(workspace=workspace, effect_store=store)
    outcome = engine.execute(spec, {"command_call": 7, "effect": digest}, context)
    assert outcome.status == "succeeded"
    assert (workspace / "new.txt").read_text() == "held\n"
    assert not (store / digest).exists()  # applied once: forgotten
    again = engine.execute(spec, {"command_call": 7, "effect": digest}, context)
    assert again.status == "failed" and again.result.startswith("Not applied: ")


def test_no_agent_is_offered_an_internal_tool() -> None:
    offered = {schema["name"] for schema in core_tool_schemas()}
    assert EFFECT_TOOL not in offered and EFFECT_TOOL not in REGISTRY
    assert facts_for(EFFECT_TOOL).internal and facts_for(EFFECT_TOOL).counts_lines
    assert not any(f.internal for f in CATALOGUE.values())


def test_each_card_kind_is_a_fact_of_its_tool() -> None:
    """The approvals card asks the catalogue which partial shows a call."""
    kinds = {name: f.card for name, f in CATALOGUE.items() if f.card}
    assert kinds == {
        "run_command": "command",
        "create_pull_request": "pull",
        "web_fetch": "fetch",
        "spawn_subagent": "subagent",
    }
    assert facts_for("deploy.ship").card == skill_tool_spec(PROMPT).facts.card == "skill"


def string_constants(value: str) -> list[str]:
    """The modules of tools_app whose code holds `value` as a string literal."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value == value:
                found.append(str(path.relative_to(APP)))
    return found


def test_the_effect_tools_name_is_written_once() -> None:
    assert string_constants(EFFECT_TOOL) == ["core/tools/catalogue.py"]


def test_every_reader_of_the_default_command_timeout_reads_the_one_value(
    tmp_path: Path,
) -> None:
    """run_command's schema and preview, a skill's command tool and the policy's
    timeout limit all mean `processes.DEFAULT_TIMEOUT` when a call names no timeout."""
    default = processes.DEFAULT_TIMEOUT
    assert RunCommandArgs.model_fields["timeout"].default == default
    schema = get_tool("run_command").json_schema()["properties"]["timeout"]
    assert schema["default"] == default and f"default: {default:g}" in schema["description"]
    counters = SessionCounters()
    ran = engine.prepare(
        PolicySpec(), get_tool("run_command"), {"command": "ls"}, tmp_path, counters
    )
    assert ran.preview is not None and ran.preview["timeout"] == default
    assert preview(COMMAND, {})["timeout"] == default
    just_below = PolicySpec(command_timeout_limit=int(default) - 1)
    facts = CallFacts("run_command", {"command": "ls"}, tmp_path)
    verdict = evaluate(just_below, facts, counters)
    assert verdict.rule == "builtin:command-timeout"
