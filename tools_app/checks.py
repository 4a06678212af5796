"""System checks: warn when commands would run without the bubblewrap sandbox."""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Warning, register

from tools_app.tools.sandbox import bwrap_available


@register()
def check_sandbox(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    if bwrap_available():
        return []
    return [
        Warning(
            "bubblewrap (bwrap) is not available: run_command runs commands unsandboxed.",
            hint="Install bubblewrap (apt-get install bubblewrap) on every worker host.",
            id="agentweb.W001",
        )
    ]
