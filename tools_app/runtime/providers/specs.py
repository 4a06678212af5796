"""Model specs (`script:PATH`, `openai:MODEL`, `anthropic:MODEL`) and the roles that name them.

A spec is what an operator types (`--model`, the API's `model`, the role settings), so a
bad one is answered with what is wrong and every form that would have worked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PROVIDERS = ("script", "openai", "anthropic")
ROLES = ("fast", "coder", "architect")
DEFAULT_ROLE = "coder"
ROLE_SETTINGS = {
    "fast": "AGENTWEB_MODEL_FAST",
    "coder": "AGENTWEB_MODEL_CODER",
    "architect": "AGENTWEB_MODEL_ARCHITECT",
}
VALID_FORMS = (
    "valid forms: script:PATH (a JSON list of steps), openai:MODEL (any OpenAI-compatible "
    "endpoint), anthropic:MODEL, or a role: fast, coder (the default), architect"
)


class ModelSpecError(ValueError):
    """A model spec or role that cannot be used; the message says why and what would work."""


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: `provider` is script/openai/anthropic, `name` the path or model name."""

    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


def parse_model_spec(spec: str) -> ModelSpec:
    """Split `PROVIDER:NAME`; raise ModelSpecError naming the problem and the valid forms."""
    text = spec.strip()
    if not text:
        raise ModelSpecError(f"the model spec is empty; {VALID_FORMS}")
    provider, colon, name = text.partition(":")
    provider = provider.strip().lower()
    if not colon:
        raise ModelSpecError(f"{text!r} is neither a model spec nor a role; {VALID_FORMS}")
    if provider not in PROVIDERS:
        raise ModelSpecError(
            f"{text!r} names the unknown provider {provider!r} "
            f"(known: {', '.join(PROVIDERS)}); {VALID_FORMS}"
        )
    name = name.strip()
    if not name:
        what = "a path" if provider == "script" else "a model name"
        raise ModelSpecError(f"{text!r} lacks {what} after '{provider}:'; {VALID_FORMS}")
    return ModelSpec(provider=provider, name=name)


def resolve_role(role_or_spec: str, roles: Mapping[str, str]) -> str:
    """The spec for a role (`fast`, `coder`, `architect`; empty means `coder`), or the spec
    itself when one is given. The result is checked, so a bad role setting fails here."""
    text = role_or_spec.strip() or DEFAULT_ROLE
    role = text.lower()
    if role in ROLES:
        spec = (roles.get(role) or "").strip()
        if not spec:
            raise ModelSpecError(
                f"the role {role!r} has no model spec: set {ROLE_SETTINGS[role]}; {VALID_FORMS}"
            )
        try:
            return str(parse_model_spec(spec))
        except ModelSpecError as error:
            raise ModelSpecError(
                f"the role {role!r} ({ROLE_SETTINGS[role]}) is not usable: {error}"
            ) from None
    return str(parse_model_spec(text))
