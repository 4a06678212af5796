from __future__ import annotations

from django.apps import AppConfig


class ToolsAppConfig(AppConfig):
    name = "tools_app"
    verbose_name = "agentweb"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tools_app import checks  # noqa: F401  (registers them)
