"""WSGI entry point (management and tests; the served app is ASGI)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentweb.settings")
application = get_wsgi_application()
