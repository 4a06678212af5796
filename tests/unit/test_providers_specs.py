"""Model specs and roles: what an operator types, and what they are told when it is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools_app.runtime.providers import ProviderSettings, build_provider, context_window_for
from tools_app.runtime.providers.anthropic_provider import AnthropicProvider
from tools_app.runtime.providers.openai_provider import OpenAIProvider
from tools_app.runtime.providers.scripted import ScriptedProvider
from tools_app.runtime.providers.specs import (
    ModelSpec,
    ModelSpecError,
    parse_model_spec,
    resolve_role,
)

ROLES = {"fast": "openai:gpt-4.1-mini", "coder": "anthropic:claude-x", "architect": "openai:o3"}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("script:plan.json", ModelSpec("script", "plan.json")),
        (
            "script:/abs/dir/plan with space.json",
            ModelSpec("script", "/abs/dir/plan with space.json"),
        ),
        ("openai:gpt-4.1", ModelSpec("openai", "gpt-4.1")),
        ("openai:qwen2.5-coder:7b", ModelSpec("openai", "qwen2.5-coder:7b")),
        ("anthropic:claude-sonnet-4-5", ModelSpec("anthropic", "claude-sonnet-4-5")),
        ("  OpenAI: gpt-4o  ", ModelSpec("openai", "gpt-4o")),
    ],
)
def test_it_parses_each_form(spec: str, expected: ModelSpec) -> None:
    assert parse_model_spec(spec) == expected


def test_a_spec_prints_as_it_is_typed() -> None:
    assert str(parse_model_spec("openai:qwen2.5-coder:7b")) == "openai:qwen2.5-coder:7b"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("gpt-4.1", "neither a model spec nor a role"),
        ("gemini:pro", "unknown provider 'gemini'"),
        ("openai:", "lacks a model name after 'openai:'"),
        ("anthropic:  ", "lacks a model name"),
        ("script:", "lacks a path after 'script:'"),
    ],
)
def test_a_bad_spec_says_what_is_wrong_and_lists_the_valid_forms(spec: str, problem: str) -> None:
    with pytest.raises(ModelSpecError) as caught:
        parse_model_spec(spec)
    assert problem in str(caught.value)
    assert "script:PATH" in str(caught.value)
    assert "openai:MODEL" in str(caught.value)
    assert "anthropic:MODEL" in str(caught.value)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("fast", "openai:gpt-4.1-mini"),
        ("coder", "anthropic:claude-x"),
        ("architect", "openai:o3"),
        ("", "anthropic:claude-x"),
        ("  ", "anthropic:claude-x"),
        ("FAST", "openai:gpt-4.1-mini"),
        ("script:plan.json", "script:plan.json"),
        ("openai:gpt-5", "openai:gpt-5"),
    ],
)
def test_it_resolves_roles_and_passes_specs_through(given: str, expected: str) -> None:
    assert resolve_role(given, ROLES) == expected


def test_a_role_without_a_spec_names_its_setting() -> None:
    with pytest.raises(ModelSpecError, match="AGENTWEB_MODEL_ARCHITECT"):
        resolve_role("architect", {"coder": "openai:gpt-4.1", "architect": ""})


def test_a_role_with_a_bad_spec_says_which_role() -> None:
    with pytest.raises(ModelSpecError) as caught:
        resolve_role("", {"coder": "gpt-4.1"})
    assert "'coder'" in str(caught.value)
    assert "AGENTWEB_MODEL_CODER" in str(caught.value)
    assert "neither a model spec nor a role" in str(caught.value)


def test_an_unknown_role_lists_the_roles() -> None:
    with pytest.raises(ModelSpecError) as caught:
        resolve_role("genius", ROLES)
    assert "fast, coder (the default), architect" in str(caught.value)


def test_context_windows_come_from_the_longest_prefix_then_the_default() -> None:
    assert context_window_for("openai:gpt-4.1-mini") == 1_047_576
    assert context_window_for("anthropic:claude-x") == 200_000
    assert context_window_for("openai:llama3") == 128_000
    assert context_window_for("openai:llama3", {"openai:llama": 8192}) == 8192
    assert context_window_for("openai:gpt-4.1", {"openai:gpt-4.1": 50_000}) == 50_000


def test_build_provider_gives_each_kind() -> None:
    settings = ProviderSettings(
        openai_api_key="sk-build-secret",
        openai_base_url="http://127.0.0.1:9/v1",
        anthropic_api_key="ak-build-secret",
        context_windows={"openai:local": 4096},
    )
    openai_provider = build_provider("openai:local-model", settings=settings)
    assert isinstance(openai_provider, OpenAIProvider)
    assert openai_provider.spec == "openai:local-model"
    assert openai_provider.context_window == 4096
    anthropic_provider = build_provider("anthropic:claude-x", settings=settings)
    assert isinstance(anthropic_provider, AnthropicProvider)
    assert anthropic_provider.context_window == 200_000
    for provider in (openai_provider, anthropic_provider):
        assert "secret" not in repr(provider)


def test_build_provider_reads_a_script(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text('[{"say": "hi"}]')
    provider = build_provider(f"script:{path}", settings=ProviderSettings())
    assert isinstance(provider, ScriptedProvider)
    assert provider.context_window == 200_000


def test_build_provider_refuses_a_role() -> None:
    with pytest.raises(ModelSpecError):
        build_provider("coder", settings=ProviderSettings())


def test_settings_never_show_keys() -> None:
    settings = ProviderSettings(openai_api_key="sk-hidden-1", anthropic_api_key="ak-hidden-2")
    assert "hidden" not in repr(settings)
    assert "hidden" not in str(settings)
