"""Reads behind what a person pastes to connect an agent (the Connect page, `hook_settings`)
and behind the tokens page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.utils import timezone

from tools_app import access
from tools_app.core.agent_connect import Connection
from tools_app.core.gateway.agent_settings import AgentSandbox
from tools_app.core.policy.defaults import DEFAULT_SPEC
from tools_app.models import ApiToken, Policy
from tools_app.selectors import records


def agent_sandbox(name: str) -> AgentSandbox:
    """The sandbox of the policy the hooks name (`default` when none is named, or its
    defaults when that policy was removed)."""
    found = records.policy_by_name(name or "default")
    spec = records.policy_spec(found) if found is not None else DEFAULT_SPEC
    return AgentSandbox(secret_paths=spec.secret_paths, hosts=spec.web_allow_hosts)


def policy_choices() -> list[tuple[str, str]]:
    return [(name, name) for name in Policy.objects.order_by("name").values_list("name", flat=True)]


def connection_for(
    *, policy: str = "", base_url: str = "", token: str = "", transport: str = "",
    managed: bool = False,
) -> Connection:  # fmt: skip
    """This server's connection facts: its URL (AGENTWEB_BASE_URL unless `base_url`), the
    hook wait, and the sandbox of `policy` ("": the default policy, named by no hook)."""
    return Connection(
        base_url=base_url or settings.AGENTWEB_BASE_URL,
        wait_seconds=int(settings.AGENTWEB_HOOK_WAIT_SECONDS),
        policy=policy,
        sandbox=agent_sandbox(policy),
        token=token,
        transport=transport,
        managed=managed,
    )


@dataclass(frozen=True)
class TokenRow:
    token: ApiToken
    state: str  # active, expired or revoked

    @property
    def live(self) -> bool:
        return self.state == "active"


def tokens_listed(user: Any, *, everyone: bool = False) -> list[TokenRow]:
    """The user's own tokens, newest first; `everyone` (a token admin only): everyone
    else's too, by owner."""
    tokens = access.visible_api_tokens(user)
    if everyone:
        tokens = tokens.exclude(user__pk=user.pk).order_by("user__username", "-created_at")
    else:
        tokens = tokens.filter(user__pk=user.pk).order_by("-created_at")
    now = timezone.now()
    return [TokenRow(token, _state(token, now)) for token in tokens[:1000]]


def _state(token: ApiToken, now: datetime) -> str:
    if token.revoked:
        return "revoked"
    return "expired" if token.expired(now) else "active"
