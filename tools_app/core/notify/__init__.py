"""Notifications as plain data: messages for webhooks, Slack and email, their signatures,
and the one SSRF-safe POST that sends them. No Django here (the services load rows and
call these)."""
