"""The outcome of a command's run, judged without Django: what its effect became, and
whether it had the network it tried to reach."""

from __future__ import annotations

from tools_app.core import outcomes
from tools_app.core.command_effects import EffectVerdict


def test_a_refused_effect_is_nothing_applied_with_the_badge_words() -> None:
    verdict = EffectVerdict(
        "refuse", reason="long words", short="1,812 lines over the limit of 500"
    )
    outcome = outcomes.effect_outcome(verdict)
    assert (outcome.kind, outcome.detail) == (
        "refused",
        "nothing applied: 1,812 lines over the limit of 500",
    )
    assert outcomes.badge("succeeded", outcome.detail) == (
        "succeeded · nothing applied: 1,812 lines over the limit of 500"
    )


def test_a_held_effect_names_its_call_and_an_empty_one_is_nothing() -> None:
    held = outcomes.effect_outcome(EffectVerdict("hold", frozenset({"a"}), "why"), held_call=7)
    assert (held.kind, held.held_call, held.detail) == (
        "held", 7, "held for a person as call 7: why"
    )  # fmt: skip
    assert outcomes.effect_outcome(EffectVerdict("apply")) == outcomes.NOTHING
    applied = outcomes.effect_outcome(EffectVerdict("apply", frozenset({"a", "b"}), "", 1200))
    assert applied.detail == "applied: 2 files (1,200 changed lines)"


def test_a_command_without_the_network_it_tried_says_so() -> None:
    output = "exit code: 1\nnpm error code EAI_AGAIN\nnpm error request to https://registry…"
    outcome = outcomes.command_outcome(
        outcomes.NOTHING, unsandboxed=False, granted=False, output=output
    )
    assert outcome is not None and outcome.network == "missing"
    assert outcome.detail.startswith("nothing to apply: the command changed no file · no network")
    assert "(EAI_AGAIN)" in outcome.detail


def test_granted_network_that_could_not_be_reached_is_missing_too() -> None:
    outcome = outcomes.command_outcome(
        outcomes.NOTHING, unsandboxed=False, granted=True,
        output="curl: (6) Could not resolve host: example.org",
    )  # fmt: skip
    assert outcome is not None and outcome.network == "missing"
    assert "network unreachable: it had the network" in outcome.detail


def test_network_is_recorded_plainly_when_nothing_failed() -> None:
    quiet = outcomes.command_outcome(
        outcomes.NOTHING, unsandboxed=False, granted=False, output="ok"
    )
    assert quiet is not None and quiet.network == "withheld"
    loud = outcomes.command_outcome(outcomes.NOTHING, unsandboxed=False, granted=True, output="ok")
    assert loud is not None and loud.network == "granted"


def test_no_command_no_outcome_and_no_sandbox_is_not_judged() -> None:
    assert outcomes.command_outcome(None, unsandboxed=False, granted=True, output="") is None
    direct = outcomes.command_outcome(None, unsandboxed=True, granted=False, output="")
    assert direct is not None and (direct.kind, direct.network) == ("not_applicable", "granted")


def test_a_long_reason_is_clipped_but_keeps_the_network_note() -> None:
    long = outcomes.refused("x" * 2000)
    outcome = outcomes.command_outcome(long, unsandboxed=False, granted=False, output="EAI_AGAIN")
    assert outcome is not None and len(outcome.detail) <= outcomes.DETAIL_CHARS
    assert outcome.detail.endswith("a rule's hosts give a command hosts")
