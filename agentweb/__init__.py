"""agentweb: the Django project. The Celery app is loaded with it so tasks are registered."""

from __future__ import annotations

from agentweb.celery import app as celery_app

__all__ = ["celery_app"]
