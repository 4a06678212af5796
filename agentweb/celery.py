"""The Celery app: settings from Django's CELERY_ namespace, tasks from tools_app."""

from __future__ import annotations

import os

from celery import Celery

from tools_app.ops.heartbeat import WorkerHeartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentweb.settings")

app = Celery("agentweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["tools_app"])
app.steps["consumer"].add(WorkerHeartbeat)  # /readyz asks for a live tool worker
