"""Protected paths match like .gitignore, against workspace-relative paths."""

from __future__ import annotations

import pytest

from tools_app.core.policy.defaults import DEFAULT_PROTECTED_PATHS
from tools_app.core.tools.paths import pattern_problem, protected_match


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        (".env", ".env"),
        (".env", "sub/.env"),
        (".env", "a/b/c/.env"),
        (".env", ".env/inside"),
        (".env*", ".env.local"),
        (".env*", ".envrc"),
        (".env.*", ".env.production"),
        (".env.*", "apps/web/.env.local"),
        (".github/**", ".github/workflows/ci.yml"),
        (".github/**", ".github/CODEOWNERS"),
        (".github/", ".github/x"),
        ("requirements*.txt", "requirements.txt"),
        ("requirements*.txt", "requirements-dev.txt"),
        ("requirements*.txt", "services/api/requirements.txt"),
        ("*.pem", "certs/server.pem"),
        ("*.key", "server.key"),
        ("Dockerfile", "docker/Dockerfile"),
        ("/Dockerfile", "Dockerfile"),
        ("config/secrets.yml", "config/secrets.yml"),
        ("config/*.yml", "config/app.yml"),
        ("**/secrets.yml", "a/b/secrets.yml"),
        ("**/secrets.yml", "secrets.yml"),
        ("a/**/b", "a/b"),
        ("a/**/b", "a/x/y/b"),
        ("deploy", "deploy/prod.sh"),
        ("file?.txt", "file1.txt"),
        ("file[0-9].txt", "x/file7.txt"),
        ("file[!0-9].txt", "filea.txt"),
    ],
)
def test_it_matches_like_gitignore(pattern: str, path: str) -> None:
    assert protected_match((pattern,), path) == pattern


@pytest.mark.parametrize(
    ("pattern", "path"),
    [
        (".env", ".envrc"),
        (".env", "my.env"),
        (".env", "env"),
        (".env.*", ".env"),
        (".github/**", "sub/.github/workflows/ci.yml"),
        (".github/**", ".githubx/a"),
        ("/Dockerfile", "docker/Dockerfile"),
        ("config/secrets.yml", "app/config/secrets.yml"),
        ("config/*.yml", "config/deep/app.yml"),
        ("*.pem", "pem"),
        ("requirements*.txt", "requirements.in"),
        ("package.json", "package.json5"),
        ("file[0-9].txt", "filea.txt"),
        (".env", "."),
        (".env", ""),
    ],
)
def test_it_does_not_match_beyond_gitignore(pattern: str, path: str) -> None:
    assert protected_match((pattern,), path) is None


def test_it_returns_the_first_matching_pattern() -> None:
    assert protected_match(("*.txt", "requirements*.txt"), "requirements.txt") == "*.txt"


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        "api/.env.local",
        ".github/workflows/ci.yml",
        "package.json",
        "web/package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "pyproject.toml",
        "requirements-test.txt",
        "poetry.lock",
        "uv.lock",
        "Cargo.toml",
        "Cargo.lock",
        "go.mod",
        "go.sum",
        "Dockerfile",
        "tls/cert.pem",
        "id.key",
    ],
)
def test_the_default_protected_paths_cover_secrets_ci_and_manifests(path: str) -> None:
    assert protected_match(DEFAULT_PROTECTED_PATHS, path) is not None


@pytest.mark.parametrize("path", ["src/app.py", "README.md", ".envrc", "docs/env.md"])
def test_the_default_protected_paths_leave_ordinary_files_alone(path: str) -> None:
    assert protected_match(DEFAULT_PROTECTED_PATHS, path) is None


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [("", "empty"), ("   ", "empty"), ("!keep.txt", "negation")],
)
def test_it_explains_unusable_patterns(pattern: str, fragment: str) -> None:
    problem = pattern_problem(pattern)
    assert problem is not None and fragment in problem


def test_a_usable_pattern_has_no_problem() -> None:
    assert pattern_problem(".github/**") is None
