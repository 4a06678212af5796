"""Which project a repository belongs to: the project with the longest pattern that
matches the repository's URL or path (a tie goes to the first name in order)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence


def project_for_repo(repo: str, projects: Iterable[tuple[str, Sequence[str]]]) -> str | None:
    """The name of the project whose patterns claim `repo`, or None when none does.

    A pattern is a glob matched case-sensitively against the whole URL or path, with and
    without a trailing slash or `.git`, so `/srv/git/pay-*` claims `/srv/git/pay-api/`
    and `https://git.example.com/pay/*` claims `https://git.example.com/pay/api.git`."""
    spellings = _spellings(repo)
    best: tuple[int, str] | None = None
    for name, patterns in sorted(projects):
        for pattern in patterns:
            matches = any(fnmatch.fnmatchcase(spelled, pattern) for spelled in spellings)
            if matches and (best is None or len(pattern) > best[0]):
                best = (len(pattern), name)
    return best[1] if best else None


def _spellings(repo: str) -> set[str]:
    bare = repo.rstrip("/")
    return {repo, bare, bare.removesuffix(".git")}


def pattern_problem(pattern: object) -> str:
    """Why a repository pattern cannot be used ("" when it can)."""
    if not isinstance(pattern, str) or not pattern.strip():
        return "must be a non-empty glob of repository URLs or paths"
    if len(pattern) > 1000:
        return "must be at most 1000 characters"
    if pattern != pattern.strip() or any(ord(c) < 32 for c in pattern):
        return "must not hold spaces at its ends or control characters"
    return ""
