from __future__ import annotations

from django.urls import path

from tools_app.api import slack
from tools_app.web import (
    approvals,
    audit,
    connect,
    notify_settings,
    password,
    pull_requests,
    sessions,
    skills,
    tokens,
)

urlpatterns = [
    path("", approvals.approvals, name="home"),
    path("approvals/", approvals.approvals, name="approvals"),
    path("approvals/cards/", approvals.approval_cards, name="approval_cards"),
    path("approvals/cards/<int:tool_call_id>/", approvals.approval_card, name="approval_card"),
    path(
        "approvals/cards/<int:tool_call_id>/remember-count",
        approvals.remember_count,
        name="remember_count",
    ),
    path("tool-calls/<int:tool_call_id>/decide", approvals.decide, name="decide"),
    path("pulls/<int:pull_id>/", pull_requests.pull_request, name="pull_request"),
    path("sessions/", sessions.session_list, name="sessions"),
    path("sessions/new/", sessions.session_new, name="session_new"),
    path("sessions/<int:session_id>/", sessions.session_detail, name="session"),
    path(
        "sessions/<int:session_id>/timeline/",
        sessions.session_timeline,
        name="session_timeline",
    ),
    path("sessions/<int:session_id>/cancel/", sessions.session_cancel_form, name="session_cancel"),
    path("audit/", audit.audit, name="audit"),
    path("audit/export/", audit.audit_export, name="audit_export"),
    path(
        "slack/interactivity/<slug:channel_name>/",
        slack.slack_interactivity,
        name="slack_interactivity",
    ),
    path("settings/notifications/", notify_settings.notify_settings, name="notify_settings"),
    path("settings/tokens/", tokens.tokens, name="tokens"),
    path("settings/password/", password.PasswordChange.as_view(), name="password_change"),
    path("settings/tokens/<int:token_id>/revoke/", tokens.token_revoke, name="token_revoke"),
    path("connect/", connect.connect, name="connect"),
    path("skills/", skills.skill_list, name="skills"),
    path("skills/new/", skills.skill_new, name="skill_new"),
    path("skills/export/", skills.skill_export, name="skill_export"),
    path("skills/import/", skills.skill_import_page, name="skill_import"),
    path("skills/<str:name>/edit/", skills.skill_edit, name="skill_edit"),
    path("skills/<str:name>/enabled/", skills.skill_enabled, name="skill_enabled"),
    path("skills/<str:name>/delete/", skills.skill_delete_form, name="skill_delete"),
]
