"""The policy engine: pure Python, no Django. See engine.py for the order of checks."""

from __future__ import annotations

from tools_app.core.policy.context import (
    argument_strings,
    is_read_only,
)
from tools_app.core.policy.defaults import DEFAULT_POLICY, DEFAULT_PROTECTED_PATHS
from tools_app.core.policy.engine import evaluate
from tools_app.core.policy.loader import (
    PolicyInvalid,
    PolicyProblem,
    policy_from_dict,
    policy_to_dict,
    validate_policy_dict,
)
from tools_app.core.policy.preview import command_review, parts_for_preview
from tools_app.core.policy.rules import exact_pattern
from tools_app.core.policy.targets import secret_targets
from tools_app.core.policy.types import (
    VERDICTS,
    CallFacts,
    Decision,
    PolicySpec,
    Rule,
    SessionCounters,
    Verdict,
)

__all__ = [
    "DEFAULT_POLICY",
    "DEFAULT_PROTECTED_PATHS",
    "VERDICTS",
    "CallFacts",
    "Decision",
    "PolicyInvalid",
    "PolicyProblem",
    "PolicySpec",
    "Rule",
    "SessionCounters",
    "Verdict",
    "argument_strings",
    "command_review",
    "evaluate",
    "exact_pattern",
    "is_read_only",
    "parts_for_preview",
    "policy_from_dict",
    "policy_to_dict",
    "secret_targets",
    "validate_policy_dict",
]
