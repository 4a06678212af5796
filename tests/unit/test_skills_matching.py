"""Trigger matching: whole words and phrases, any case, any punctuation, no substrings."""

from __future__ import annotations

import pytest

from tools_app.core.skills.matching import activations, matched_triggers


@pytest.mark.parametrize(
    ("trigger", "task"),
    [
        ("ship", "ship the release"),
        ("ship", "Ready? SHIP it!"),
        ("ship", "(ship)"),
        ("ship", "ship."),
        ("ship", "please ship"),
        ("release", "cut a release, then tag it"),
        ("code review", "Do a code review of parse()"),
        ("code review", "code-review this"),
        ("code review", "code   review"),
        ("code review", "code\nreview"),
        ("Unit Test", "write a unit test"),
        ("test", "the test_empty test fails"),
        ("déploiement", "lancer le Déploiement"),
    ],
)
def test_a_trigger_matches_as_a_whole_word_or_phrase(trigger: str, task: str) -> None:
    assert matched_triggers([trigger], task) == (trigger,)


@pytest.mark.parametrize(
    ("trigger", "task"),
    [
        ("ship", "fix the relationship"),
        ("ship", "shipping is slow"),
        ("ship", "shipit"),
        ("test", "contest the ruling"),
        ("test", "attestation"),
        ("code review", "code reviewer"),
        ("code review", "review code"),
        ("code review", "code and review"),
        ("lint", "flint"),
        ("!!!", "!!! alarm"),
        ("", "anything"),
    ],
)
def test_a_trigger_never_matches_inside_another_word(trigger: str, task: str) -> None:
    assert matched_triggers([trigger], task) == ()


def test_activations_list_each_skill_with_the_words_that_matched() -> None:
    skills = [
        ("deploy", ["deploy", "release", "ship"]),
        ("lint", ["lint"]),
        ("tests", ["unit test", "test"]),
    ]
    found = activations(skills, "Ship the release after a unit test")
    assert [a.as_dict() for a in found] == [
        {"skill": "deploy", "words": ["release", "ship"]},
        {"skill": "tests", "words": ["unit test", "test"]},
    ]


def test_a_skill_without_triggers_never_activates() -> None:
    assert activations([("notes", [])], "notes notes notes") == []
