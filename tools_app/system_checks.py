"""System checks: warn when commands would run without the copy-on-write sandbox."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning, register

from tools_app.tools.overlay import cow_available


@register()
def check_sandbox(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    if cow_available():
        return []
    return [
        Warning(
            "the copy-on-write sandbox (unshare + overlayfs + bubblewrap) does not work here: "
            "every run_command waits for a person and runs unsandboxed.",
            hint="Install bubblewrap and util-linux (apt-get install bubblewrap) and allow "
            "unprivileged user namespaces on every worker host.",
            id="agentweb.W001",
        )
    ]
