#!/usr/bin/env python
"""Django's command-line utility for agentweb."""

from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentweb.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        settings.INSTALLED_APPS  # noqa: B018 - loads the settings, which check the environment
    except ImproperlyConfigured as exc:
        # A wrong setting is the operator's to fix: say which, without a traceback.
        sys.exit(f"agentweb cannot start: {exc} (set in the environment or in .env)")

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
