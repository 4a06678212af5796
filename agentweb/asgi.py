"""ASGI entry point for daphne: pages, admin, API and static files over one port."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentweb.settings")
django_application = get_asgi_application()

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

# Static files are served by the app itself so that `manage.py up` needs no web server,
# with or without DEBUG.
application = ASGIStaticFilesHandler(django_application)
