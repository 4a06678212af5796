from __future__ import annotations

from pathlib import Path

from django.apps import AppConfig


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "agentweb"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from tools_app import checks  # noqa: F401  (registers them)
        from tools_app.core.tools import git_env

        git_env.use_home(Path(settings.AGENTWEB_VAR) / "git-home")
