from __future__ import annotations

from django.urls import path

from tools_app import views

urlpatterns = [
    path("", views.approvals, name="home"),
    path("approvals/", views.approvals, name="approvals"),
    path("tool-calls/<int:tool_call_id>/decide", views.decide, name="decide"),
    path("pulls/<int:pull_id>/", views.pull_request, name="pull_request"),
]
