"""Every state change, named <entity>_<action>. Views, API, tasks and commands call these."""

from __future__ import annotations

from tools_app.errors import (
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    ServiceError,
    Unavailable,
)
from tools_app.services.agents import agent_turn
from tools_app.services.audit import audit_prune, audit_record
from tools_app.services.decisions import tool_call_decide
from tools_app.services.maintenance import (
    agent_recover_turns,
    agent_requeue_stalled,
    sandbox_sweep_scratch,
    tool_call_expire_overdue,
    tool_call_recover_interrupted,
    tool_call_requeue_orphans,
)
from tools_app.services.mcp_connections import mcp_connection_prune
from tools_app.services.policies import (
    load_policy_or_denial,
    policy_bump_version,
    policy_evaluate,
    policy_import,
    policy_rule_remember,
)
from tools_app.services.sessions import (
    session_cancel,
    session_close_cli,
    session_open_for_workspace,
    session_prepare,
    session_requeue_unprepared,
    session_start,
)
from tools_app.services.sign_in import sign_in_prune
from tools_app.services.slack import slack_deny_form_open
from tools_app.services.tokens import api_token_authenticate, api_token_create
from tools_app.services.tool_calls import (
    session_counters,
    tool_call_evaluate,
    tool_call_execute,
    tool_call_receive,
    tool_call_receive_external,
    tool_call_run_in_process,
)

__all__ = [
    "Conflict",
    "Forbidden",
    "Invalid",
    "NotFound",
    "ServiceError",
    "Unavailable",
    "agent_recover_turns",
    "agent_requeue_stalled",
    "agent_turn",
    "api_token_authenticate",
    "api_token_create",
    "audit_prune",
    "audit_record",
    "load_policy_or_denial",
    "mcp_connection_prune",
    "policy_bump_version",
    "policy_evaluate",
    "policy_import",
    "policy_rule_remember",
    "sandbox_sweep_scratch",
    "session_cancel",
    "session_close_cli",
    "session_counters",
    "session_open_for_workspace",
    "session_prepare",
    "session_requeue_unprepared",
    "session_start",
    "sign_in_prune",
    "slack_deny_form_open",
    "tool_call_decide",
    "tool_call_evaluate",
    "tool_call_execute",
    "tool_call_expire_overdue",
    "tool_call_receive",
    "tool_call_receive_external",
    "tool_call_recover_interrupted",
    "tool_call_requeue_orphans",
    "tool_call_run_in_process",
]
