"""Model providers: one `complete()` per turn, the neutral conversation in, a `Reply` out.

Pure: no Django here. The caller reads settings and passes them in as `ProviderSettings`;
keys live only in that object and the SDK client, and are never shown (not in its repr,
not in any error message). Only what this module defines is exported: the providers,
the model specs and the conversation's types come from their own modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tools_app.runtime.conversation import Provider
from tools_app.runtime.providers.scripted import ScriptedProvider
from tools_app.runtime.providers.specs import ModelSpec, parse_model_spec

DEFAULT_CONTEXT_WINDOW = 128_000
# Context windows by spec prefix (the longest matching prefix wins); anything else gets
# DEFAULT_CONTEXT_WINDOW. `ProviderSettings.context_windows` adds to or overrides these.
CONTEXT_WINDOWS: Mapping[str, int] = {
    "script:": 200_000,
    "anthropic:": 200_000,
    "openai:gpt-4.1": 1_047_576,
    "openai:gpt-4o": 128_000,
    "openai:gpt-5": 400_000,
    "openai:o3": 200_000,
    "openai:o4": 200_000,
}


@dataclass(frozen=True)
class ProviderSettings:
    """What providers need from settings, as plain values. Keys stay out of the repr."""

    openai_api_key: str = field(default="", repr=False)
    openai_base_url: str = ""
    anthropic_api_key: str = field(default="", repr=False)
    anthropic_base_url: str = ""
    timeout: float = 120.0
    max_retries: int = 2
    context_windows: Mapping[str, int] = field(default_factory=dict)
    anthropic_max_tokens: int = 8192


def context_window_for(spec: ModelSpec | str, overrides: Mapping[str, int] | None = None) -> int:
    """The window of the longest prefix of the spec in `overrides` or the default table."""
    text = str(spec)
    table = {**CONTEXT_WINDOWS, **(overrides or {})}
    matches = [prefix for prefix in table if text.startswith(prefix)]
    return table[max(matches, key=len)] if matches else DEFAULT_CONTEXT_WINDOW


def build_provider(spec: str, *, settings: ProviderSettings) -> Provider:
    """The provider for a spec (not a role: see `resolve_role`). Raises ModelSpecError for
    a bad spec and ProviderError for a script file that cannot be used."""
    parsed = parse_model_spec(spec)
    window = context_window_for(parsed, settings.context_windows)
    if parsed.provider == "script":
        return ScriptedProvider(parsed.name, context_window=window)
    # The SDKs are imported here, not at the top: importing both costs every process that
    # imports the services (daphne, each worker, each manage.py command) seconds of CPU,
    # and most of them never build an SDK provider.
    if parsed.provider == "openai":
        from tools_app.runtime.providers.openai_provider import OpenAIProvider

        return OpenAIProvider(
            parsed.name,
            api_key=settings.openai_api_key,
            base_url=settings.openai_base_url,
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            context_window=window,
        )
    from tools_app.runtime.providers.anthropic_provider import AnthropicProvider

    return AnthropicProvider(
        parsed.name,
        api_key=settings.anthropic_api_key,
        base_url=settings.anthropic_base_url,
        timeout=settings.timeout,
        max_retries=settings.max_retries,
        context_window=window,
        max_tokens=settings.anthropic_max_tokens,
    )


__all__ = [
    "CONTEXT_WINDOWS",
    "DEFAULT_CONTEXT_WINDOW",
    "ProviderSettings",
    "build_provider",
    "context_window_for",
]
