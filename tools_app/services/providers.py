"""Model specs and providers from the settings: the one place that reads provider keys."""

from __future__ import annotations

import functools

from django.conf import settings

from tools_app.errors import ServiceError
from tools_app.runtime.conversation import Provider
from tools_app.runtime.providers import ProviderSettings, build_provider
from tools_app.runtime.providers.specs import resolve_role


def model_roles() -> dict[str, str]:
    return {
        "fast": settings.AGENTWEB_MODEL_FAST,
        "coder": settings.AGENTWEB_MODEL_CODER,
        "architect": settings.AGENTWEB_MODEL_ARCHITECT,
    }


def model_spec_resolve(model: str, *, fallback: str = "") -> str:
    """A role or a spec → a checked spec; a role with no model configured takes `fallback`.

    Raises ServiceError naming what is wrong, so a bad `model` changes nothing."""
    roles = {role: spec or fallback for role, spec in model_roles().items()}
    try:
        return resolve_role(model, roles)
    except ValueError as exc:
        raise ServiceError(f"`model`: {exc}") from exc


def provider_settings() -> ProviderSettings:
    return ProviderSettings(
        openai_api_key=settings.OPENAI_API_KEY,
        openai_base_url=settings.OPENAI_BASE_URL,
        anthropic_api_key=settings.ANTHROPIC_API_KEY,
        anthropic_base_url=settings.ANTHROPIC_BASE_URL,
        timeout=float(settings.AGENTWEB_MODEL_TIMEOUT),
        max_retries=settings.AGENTWEB_MODEL_RETRIES,
    )


def provider_for(spec: str) -> Provider:
    """The provider of a checked spec; ProviderError when it cannot be built.

    SDK clients are kept per spec for the life of the process, so a worker reuses their
    connection pools instead of opening (and leaking) one per turn. A script is read
    afresh each time: it is a file an operator may change between runs."""
    if spec.startswith("script:"):
        return build_provider(spec, settings=provider_settings())
    return _sdk_provider(spec)


@functools.lru_cache(maxsize=16)
def _sdk_provider(spec: str) -> Provider:
    return build_provider(spec, settings=provider_settings())
