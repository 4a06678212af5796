"""A card's facts come from where the call runs; a fact that is not known is not printed."""

from __future__ import annotations

from tools_app.core.card_facts import Fact, InAgentweb, OnAgentMachine, card_facts


def shown(facts: tuple[Fact, ...]) -> dict[str, str]:
    return {fact.label: fact.text for fact in facts}


def test_a_sandboxed_command_says_sandbox_network_and_agentwebs_timeout() -> None:
    facts = shown(card_facts(InAgentweb(runs_command=True, sandboxed=True, timeout=120)))
    assert facts["Sandbox"].startswith("agentweb's copy-on-write sandbox")
    assert facts["Network"] == "off"
    assert facts["Timeout"] == "120 s"


def test_without_the_hosts_sandbox_the_card_warns_of_the_workers_rights_and_network() -> None:
    facts = card_facts(InAgentweb(runs_command=True, sandboxed=False, timeout=30))
    warned = {fact.label for fact in facts if fact.warn}
    assert warned == {"Sandbox", "Network"}
    assert "with the worker's rights" in shown(facts)["Sandbox"]
    assert shown(facts)["Network"].startswith("on: no sandbox on this host")


def test_a_waiting_command_says_which_hosts_approving_opens_never_the_whole_network() -> None:
    npm = ("registry.npmjs.org",)
    waiting = InAgentweb(runs_command=True, sandboxed=True, awaiting=True, hosts=npm)
    assert shown(card_facts(waiting))["Network"] == (
        "off now; approving opens only registry.npmjs.org"
    )
    nothing = InAgentweb(runs_command=True, sandboxed=True, awaiting=True)
    assert shown(card_facts(nothing))["Network"] == "off: approving opens no host"
    ran = InAgentweb(runs_command=True, sandboxed=True, hosts=npm)
    assert shown(card_facts(ran))["Network"] == (
        "only registry.npmjs.org, through agentweb's proxy"
    )


def test_the_card_names_the_hosts_that_get_a_credential_never_the_secret() -> None:
    hosts = ("npm.example.com", "registry.npmjs.org")
    waiting = InAgentweb(
        runs_command=True, awaiting=True, hosts=hosts, credential_hosts=("npm.example.com",)
    )
    assert shown(card_facts(waiting))["Network"] == (
        "off now; approving opens only npm.example.com, registry.npmjs.org "
        "(a credential is added for npm.example.com)"
    )


def test_after_a_run_the_card_lists_each_connection_and_warns_of_a_refused_one() -> None:
    allowed = {"host": "registry.npmjs.org", "port": 443, "sent": 812, "received": 3_400_000}
    refused = {"host": "evil.example", "port": 443, "sent": 0, "received": 0}
    ran = InAgentweb(
        runs_command=True,
        hosts=("registry.npmjs.org",),
        connections=(allowed | {"allowed": True}, refused | {"allowed": False}),
    )
    fact = next(f for f in card_facts(ran) if f.label == "Connections")
    assert fact.text == (
        "registry.npmjs.org:443 allowed, 812 B sent, 3.4 MB received; "
        "evil.example:443 refused (not in this command's hosts)"
    )
    assert fact.warn


def test_an_unrecorded_sandbox_or_timeout_is_not_printed() -> None:
    facts = shown(card_facts(InAgentweb(runs_command=True)))
    assert "Sandbox" not in facts and "Timeout" not in facts


def test_a_call_that_runs_no_command_in_agentweb_has_no_facts() -> None:
    assert card_facts(InAgentweb(runs_command=False, sandboxed=False)) == ()


def test_a_gateway_command_says_where_it_runs_and_nothing_of_agentwebs_sandbox() -> None:
    facts = shown(card_facts(OnAgentMachine("Bash", "/home/alice/project", runs_command=True)))
    assert facts["Where"].startswith("the agent's machine, in /home/alice/project")
    assert facts["Agent's sandbox"] == "none reported by the agent"
    assert set(facts) == {"Where", "Agent's sandbox"}  # no network, no timeout: unknown
    assert "copy-on-write" not in " ".join(facts.values())
    assert "worker" not in " ".join(facts.values())


def test_a_gateway_command_shows_the_agents_own_timeout_when_it_sent_one() -> None:
    where = OnAgentMachine("Bash", "/p", runs_command=True, timeout=90)
    assert shown(card_facts(where))["Timeout"] == "90 s (the agent's own)"


def test_a_gateway_command_outside_the_agents_sandbox_has_the_machines_network() -> None:
    off = "off for this call: the agent asked to run it outside its sandbox"
    facts = shown(card_facts(OnAgentMachine("Bash", "/p", runs_command=True, sandbox_off=off)))
    assert facts["Agent's sandbox"] == off
    assert facts["Network"] == "the machine's own: the agent's sandbox is off for this call"


def test_a_gateway_write_says_where_and_the_mappings_notes() -> None:
    where = OnAgentMachine("Edit", "/p", notes=("replaces every occurrence (replace_all)",))
    facts = shown(card_facts(where))
    assert set(facts) == {"Where", "Agent's sandbox", "Note"}
