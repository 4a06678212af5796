"""URL routes: admin, the REST API and the pages."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from tools_app.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", include("tools_app.urls")),
]
