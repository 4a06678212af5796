"""System checks: which uid commands run as, a warning when they would run without the
copy-on-write sandbox, the egress proxy's test-only allowance left on, and single
sign-on settings that are set halfway."""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, Info, Warning, register

from tools_app.core import sso
from tools_app.core.egress import config as egress_config
from tools_app.core.tools import sandbox_user
from tools_app.core.tools.cow_probe import cow_available, cow_unavailable_reason


@register()
def check_sandbox(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    try:
        who = sandbox_user.describe_user()
        sandbox_user.limits(1)
    except sandbox_user.SandboxUserError as exc:
        return [Error(f"the sandbox settings are wrong: {exc}", id="agentweb.E001")]
    if cow_available():
        return [Info(who, id="agentweb.I001")] if _check_command() else []
    return [
        Warning(
            f"the copy-on-write sandbox does not work here: {cow_unavailable_reason()}. "
            "Every run_command waits for a person and runs unsandboxed.",
            hint="Fix that cause on every worker host. The sandbox needs bubblewrap and "
            "util-linux (apt-get install bubblewrap), unprivileged user namespaces, a temp "
            "dir its uid can enter, and for a root worker idmapped mounts (Linux 5.19+).",
            id="agentweb.W001",
        )
    ]


@register()
def check_egress(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """The tests' loopback allowance of the egress proxy is malformed, or on in production."""
    try:
        pinned = egress_config.test_hosts()
    except ValueError as exc:
        return [Error(str(exc), id="agentweb.E020")]
    if not pinned or settings.DEBUG:
        return []
    return [
        Warning(
            f"{egress_config.TEST_HOSTS_ENV} pins {', '.join(sorted(pinned))} to loopback "
            "addresses: commands granted those hosts reach this machine's services.",
            hint="It is for tests only; leave it empty in production.",
            id="agentweb.W020",
        )
    ]


def _check_command() -> bool:
    """True under `manage.py check`: the uid is news there, noise before every command."""
    return sys.argv[1:2] == ["check"]


@register()
def check_sso(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Single sign-on set up halfway is off, silently: say what it lacks."""
    found: list[CheckMessage] = [
        Warning(
            f"single sign-on is half-configured and stays off: {problem}.",
            hint="Set AGENTWEB_OIDC_ISSUER (or every endpoint), AGENTWEB_OIDC_CLIENT_ID and "
            "AGENTWEB_OIDC_CLIENT_SECRET together, or none of them.",
            id="agentweb.W010",
        )
        for problem in sso.configuration_problems(_sso_values())
    ]
    try:
        sso.parse_group_map(settings.AGENTWEB_OIDC_GROUP_MAP)
    except ValueError as exc:
        found.append(
            Error(f"AGENTWEB_OIDC_GROUP_MAP is malformed: {exc}.", id="agentweb.E010",
                  hint='JSON {"provider group": "agentweb group"} or provider=agentweb,...')
        )  # fmt: skip
    if not settings.AGENTWEB_PASSWORD_LOGIN and not settings.AGENTWEB_SSO:
        found.append(
            Warning(
                "AGENTWEB_PASSWORD_LOGIN is off and single sign-on is not configured: only "
                "superusers can sign in (at /admin/login/).",
                id="agentweb.W011",
            )
        )
    return found


def _sso_values() -> dict[str, str]:
    endpoints = settings.AGENTWEB_OIDC_ENDPOINTS
    values = {f"AGENTWEB_OIDC_{key.upper()}": endpoints.get(key, "") for key in sso.ENDPOINT_KEYS}
    return values | {
        "AGENTWEB_OIDC_ISSUER": settings.AGENTWEB_OIDC_ISSUER,
        "AGENTWEB_OIDC_CLIENT_ID": settings.AGENTWEB_OIDC_CLIENT_ID,
        "AGENTWEB_OIDC_CLIENT_SECRET": settings.AGENTWEB_OIDC_CLIENT_SECRET,
    }
