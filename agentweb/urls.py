"""URL routes: admin and the REST API (the dashboard pages come with their own views)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from tools_app.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
]
