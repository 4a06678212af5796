"""`manage.py check --deploy` with the settings the deployment page gives
(deploy/agentweb.env, docs/deployment.md) reports nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ROOT_ONLY = "agentweb.I001"  # the units run as `agentweb`; a root test process is told so


def deploy_env(var: Path) -> dict[str, str]:
    own = {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"}
    env = {key: value for key, value in os.environ.items() if key not in own}
    for line in (ROOT / "deploy" / "agentweb.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    paths = {"AGENTWEB_VAR": var, "AGENTWEB_WORKSPACES": var / "ws"}
    paths["PROMETHEUS_MULTIPROC_DIR"] = var / "metrics"  # never the host's /run
    return {**env, **{key: str(path) for key, path in paths.items()}}


def test_check_deploy_reports_nothing_with_the_deployment_pages_settings(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "INFO"],
        cwd=ROOT, env=deploy_env(tmp_path), capture_output=True, text=True,
    )  # fmt: skip
    output = done.stdout + done.stderr
    if done.returncode != 0 and os.geteuid() == 0:
        issues = [line for line in output.splitlines() if line.startswith("?: (")]
        assert [line.split(")")[0] for line in issues] == [f"?: ({ROOT_ONLY}"], output
        return
    assert done.returncode == 0 and "no issues" in output, output
