"""System checks: which uid commands run as, and a warning when they would run without
the copy-on-write sandbox."""

from __future__ import annotations

import sys
from typing import Any

from django.core.checks import CheckMessage, Error, Info, Warning, register

from tools_app.core.tools import sandbox_user
from tools_app.core.tools.overlay import cow_available, cow_unavailable_reason


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


def _check_command() -> bool:
    """True under `manage.py check`: the uid is news there, noise before every command."""
    return sys.argv[1:2] == ["check"]
