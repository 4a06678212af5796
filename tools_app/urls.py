from __future__ import annotations

from django.urls import path

from tools_app import audit_views, session_views, skill_views, slack_views, views, views_approvals

urlpatterns = [
    path("", views_approvals.approvals, name="home"),
    path("approvals/", views_approvals.approvals, name="approvals"),
    path("approvals/cards/", views_approvals.approval_cards, name="approval_cards"),
    path(
        "approvals/cards/<int:tool_call_id>/", views_approvals.approval_card, name="approval_card"
    ),
    path(
        "approvals/cards/<int:tool_call_id>/remember-count",
        views_approvals.remember_count,
        name="remember_count",
    ),
    path("tool-calls/<int:tool_call_id>/decide", views_approvals.decide, name="decide"),
    path("pulls/<int:pull_id>/", views.pull_request, name="pull_request"),
    path("sessions/", session_views.session_list, name="sessions"),
    path("sessions/new/", session_views.session_new, name="session_new"),
    path("sessions/<int:session_id>/", session_views.session_detail, name="session"),
    path(
        "sessions/<int:session_id>/timeline/",
        session_views.session_timeline,
        name="session_timeline",
    ),
    path("sessions/<int:session_id>/cancel/", session_views.session_cancel, name="session_cancel"),
    path("audit/", audit_views.audit, name="audit"),
    path(
        "slack/interactivity/<slug:channel_name>/",
        slack_views.slack_interactivity,
        name="slack_interactivity",
    ),
    path("audit/export/", audit_views.audit_export, name="audit_export"),
    path("skills/", skill_views.skill_list, name="skills"),
    path("skills/new/", skill_views.skill_new, name="skill_new"),
    path("skills/export/", skill_views.skill_export, name="skill_export"),
    path("skills/import/", skill_views.skill_import, name="skill_import"),
    path("skills/<str:name>/edit/", skill_views.skill_edit, name="skill_edit"),
    path("skills/<str:name>/enabled/", skill_views.skill_enabled, name="skill_enabled"),
    path("skills/<str:name>/delete/", skill_views.skill_delete, name="skill_delete"),
]
