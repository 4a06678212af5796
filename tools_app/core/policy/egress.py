"""The network a judged `run_command` gets: the hosts of its class, changed by the rule
that decided it, and only when something lets it have them.

* A command the policy allows gets its class's hosts when the policy's
  `command_network` is on, or when a rule allowed it; otherwise none.
* A command that waits for a person gets, once approved, the hosts shown on its card:
  its class's, changed by its rule.
* The rule that decided the call changes the hosts (`Rule.hosts`: add, remove, only);
  a remembered rule carries `only`, the hosts it was approved with.
* Never the whole network: no hosts, no grant (`None`), and nothing connects.
"""

from __future__ import annotations

from tools_app.core.egress.classes import class_hosts, command_hosts_table
from tools_app.core.egress.grant import EgressGrant
from tools_app.core.policy.context import CallContext
from tools_app.core.policy.types import Rule, Verdict

__all__ = ["command_egress"]


def command_egress(verdict: Verdict, context: CallContext) -> EgressGrant | None:
    """The grant a judged call carries; None for no network (or not a command)."""
    analysis = context.analysis
    if analysis is None or verdict.kind == "deny":
        return None
    rule = _deciding_rule(verdict, context.policy.rules)
    if verdict.kind == "allow" and rule is None and not context.policy.command_network:
        return None
    table = command_hosts_table(context.policy.command_hosts)
    known = () if analysis.opaque else analysis.commands
    hosts = class_hosts(known, table, context.call.workspace) if known else ()
    if rule is not None and rule.hosts is not None:
        hosts = rule.hosts.apply(hosts)
    return EgressGrant(hosts=hosts) if hosts else None


def _deciding_rule(verdict: Verdict, rules: tuple[Rule, ...]) -> Rule | None:
    """The explicit rule the verdict names ("rule 12"), if one decided it."""
    return next((rule for rule in rules if verdict.rule == f"rule {rule.id}"), None)
