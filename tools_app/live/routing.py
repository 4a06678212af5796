from __future__ import annotations

from django.urls import path

from tools_app.live.consumers import ApprovalsConsumer, SessionConsumer

websocket_urlpatterns = [
    path("ws/approvals/", ApprovalsConsumer.as_asgi()),
    path("ws/sessions/<int:session_id>/", SessionConsumer.as_asgi()),
]
