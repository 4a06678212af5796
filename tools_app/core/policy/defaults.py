"""The `default` policy: what a new policy starts with and what a migration creates.

Protected paths are the files that change what code runs or what it may reach:
secrets, CI, dependency manifests and lock files, container builds, keys.
"""

from __future__ import annotations

from typing import Any

from tools_app.core.policy.types import PLAIN_FIELDS, PolicySpec, field_values

DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    ".env",
    ".env.*",
    ".github/**",
    "package.json",
    "package-lock.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "pyproject.toml",
    "requirements*.txt",
    "poetry.lock",
    "uv.lock",
    "Cargo.toml",
    "Cargo.lock",
    "go.mod",
    "go.sum",
    "Dockerfile",
    "*.pem",
    "*.key",
    # Configuration that makes package managers and git run programs of its choosing.
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
    "pip.conf",
    ".pypirc",
    ".cargo/config*",
    ".bundle/config",
    ".gemrc",
    ".gitmodules",
)

# Files whose contents are credentials: reading one needs a person.
DEFAULT_SECRET_PATHS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
    "*credentials*",
)

# Credentials of the machine an agent runs on, outside any project: gate mode never lets a
# command read them unseen, and the agent's own sandbox is told to hide them.
HOME_SECRET_PATHS: tuple[str, ...] = (
    "~/.ssh/",
    "~/.aws/",
    "~/.azure/",
    "~/.config/gcloud/",
    "~/.kube/",
    "~/.gnupg/",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
)

DEFAULT_SPEC = PolicySpec(
    name="default",
    protected_paths=DEFAULT_PROTECTED_PATHS,
    blocked_commands=("rm -rf /", "curl | sh"),
    secret_paths=DEFAULT_SECRET_PATHS,
)
# The same as a policy file holds it; keys in PolicySpec's order, the rules last.
DEFAULT_POLICY: dict[str, Any] = field_values(DEFAULT_SPEC, PLAIN_FIELDS) | {"rules": []}
