"""One protected-path matcher, gitignore semantics, for the policy, tools and sandbox."""

from __future__ import annotations

import pytest

from tools_app.core.tools.paths import in_git_dir, protected_match


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        (".env", ".env", True),
        (".env", "a/b/.env", True),
        (".env", ".env/inside", True),
        (".env", ".envrc", False),
        ("*.pem", "deep/x/key.pem", True),
        ("*.pem", "pem", False),
        ("file?.txt", "sub/file1.txt", True),
        ("file?.txt", "file10.txt", False),
        ("/Dockerfile", "Dockerfile", True),
        ("/Dockerfile", "docker/Dockerfile", False),
        ("config/prod.yml", "config/prod.yml", True),
        ("config/prod.yml", "a/config/prod.yml", False),
        ("config/*.yml", "config/app.yml", True),
        ("config/*.yml", "config/deep/app.yml", False),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/x/y/c", False),
        ("**/secrets.yml", "secrets.yml", True),
        ("**/secrets.yml", "x/y/secrets.yml", True),
        ("secrets", "secrets/a/b.txt", True),
        ("**", "anything/at/all", True),
        ("", "a", False),
        ("# a comment", "# a comment", False),
        (".env", ".", False),
        (".env", "", False),
    ],
)
def test_it_matches_like_gitignore(pattern: str, path: str, expected: bool) -> None:
    assert (protected_match((pattern,), path) == pattern) is expected


@pytest.mark.parametrize(
    "pattern", [".github", ".github/", ".github/**", "/.github", "/.github/**"]
)
@pytest.mark.parametrize("path", [".github", ".github/x", ".github/workflows/ci.yml"])
def test_a_directory_and_its_contents_are_protected_by_every_spelling(
    pattern: str, path: str
) -> None:
    """`.github/**` must also cover `.github`: deleting the directory deletes its contents."""
    assert protected_match((pattern,), path) == pattern


@pytest.mark.parametrize("pattern", [".github/**", "/.github"])
@pytest.mark.parametrize("path", ["sub/.github/x", ".githubx/a", ".githubx"])
def test_anchored_directory_patterns_do_not_cover_lookalikes(pattern: str, path: str) -> None:
    assert protected_match((pattern,), path) is None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".git", True),
        (".git/hooks/pre-commit", True),
        ("sub/.git/config", True),
        (".github", False),
    ],
)
def test_it_detects_git_dirs(path: str, expected: bool) -> None:
    assert in_git_dir(path) is expected
