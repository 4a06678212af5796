"""Which project a repository belongs to: the longest matching pattern, any spelling of
the same repository, nothing when no pattern matches."""

from __future__ import annotations

import pytest

from tools_app.core.projects import pattern_problem, project_for_repo

PROJECTS = [
    ("payments", ["/srv/git/pay-*", "https://git.example.com/pay/*"]),
    ("ledger", ["/srv/git/pay-ledger"]),
    ("platform", ["/srv/git/*"]),
]


@pytest.mark.parametrize(
    ("repo", "project"),
    [
        ("/srv/git/pay-api", "payments"),
        ("/srv/git/pay-api/", "payments"),
        ("/srv/git/pay-ledger", "ledger"),  # longer than pay-* and *
        ("/srv/git/infra", "platform"),
        ("https://git.example.com/pay/api.git", "payments"),
        ("https://git.example.com/PAY/api", None),  # case matters
        ("/home/me/src/pay-api", None),
    ],
)
def test_the_longest_matching_pattern_claims_the_repository(repo: str, project: str | None) -> None:
    assert project_for_repo(repo, PROJECTS) == project


def test_a_tie_goes_to_the_first_name() -> None:
    assert project_for_repo("/r/x", [("zeta", ["/r/*"]), ("alpha", ["/r/?"])]) == "alpha"


@pytest.mark.parametrize("pattern", ["", "  ", " /srv/*", "/srv/\x00", 3, "x" * 1001])
def test_a_bad_pattern_is_named(pattern: object) -> None:
    assert pattern_problem(pattern)
