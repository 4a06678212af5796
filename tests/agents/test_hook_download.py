"""agentweb-hook on a developer's laptop, where agentweb is not installed.

The laptop is an empty virtualenv (no agentweb, no Django) whose `bin/` is first on PATH.
`curl` fetches the hook from the live agentweb into it, as the docs say; the real Codex
CLI then runs it, and `agentweb-hook check` proves the wiring or says in one line what
to fix. The hook is also a package of its own: pip builds and installs it into an empty
virtualenv offline (its build backend is the standard library).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from tests.agents.test_codex import CODEX, NATIVE, approved_env_write
from tests.browser.server import free_port
from tests.helpers import ROOT
from tools_app.models import AgentSession, Event, ToolCall

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

NEEDS_CODEX = pytest.mark.skipif(
    not (CODEX.exists() and NATIVE), reason=f"Codex CLI is not installed at {CODEX}"
)


@pytest.fixture(scope="module")
def laptop(agentweb: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The laptop's `bin/`: a virtualenv's, holding `agentweb-hook` as `curl` saved it."""
    root = tmp_path_factory.mktemp("laptop") / "venv"
    venv.create(root, with_pip=False)
    hook = root / "bin" / "agentweb-hook"
    url = f"{agentweb}/api/hooks/agentweb-hook.py"
    subprocess.run(["curl", "-fsS", "-o", str(hook), url], check=True)
    hook.chmod(0o755)
    alone = subprocess.run([root / "bin" / "python3", "-c", "import django"], capture_output=True)
    assert alone.returncode != 0, "the laptop's Python must not see agentweb's packages"
    return root / "bin"


def on_laptop(bin_dir: Path, url: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """A command on the laptop: its bin/ first on PATH, then the system's, no agentweb."""
    env = {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(bin_dir.parent),
        "AGENTWEB_URL": url,
        "AGENTWEB_TOKEN": token,
    }
    return subprocess.run(
        list(args), env=env, capture_output=True, text=True, timeout=60, check=False
    )


def stored() -> list[int]:
    return [model.objects.count() for model in (AgentSession, ToolCall, Event)]


@NEEDS_CODEX
def test_codex_with_the_downloaded_hook_is_governed(
    agentweb: str, token: str, project: Path, laptop: Path, rita: User
) -> None:
    """A write of .env waits in the inbox, is approved, and only then lands on disk."""
    call = approved_env_write(agentweb, token, project, laptop, rita, system_path=True)
    assert (call.native_tool, call.status) == ("Bash", "succeeded")


def test_check_passes_against_a_good_setup_and_stores_nothing(
    agentweb: str, token: str, laptop: Path
) -> None:
    before = stored()
    done = on_laptop(laptop, agentweb, token, "agentweb-hook", "check", "codex")
    assert done.returncode == 0, done.stderr
    assert stored() == before
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "ok   server", "ok   hook version", "ok   token", "ok   policy", "ok   allows ls",
        "ok   holds a write of .env",
    ]  # fmt: skip
    assert lines[-1] == (
        f"agentweb-hook check: codex is governed by agentweb 0.1.0 at {agentweb} as alice, "
        "policy 'default'"
    )


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("bad token", "refused the token (The bearer token is not valid: the token is "
         "unknown.): set AGENTWEB_TOKEN to an agent token of this agentweb"),
        ("unknown policy", "There is no policy named 'nope'. Ask an admin for the policy's "
         "name, or leave it out. (--policy or AGENTWEB_POLICY)"),
        ("unreachable", "Connection refused>): is AGENTWEB_URL right, and agentweb up?"),
    ],
)  # fmt: skip
def test_check_fails_clearly_in_one_line(
    agentweb: str, token: str, laptop: Path, case: str, says: str
) -> None:
    url, args = agentweb, ["agentweb-hook", "check"]
    if case == "bad token":
        token = "aw_not-a-token"
    elif case == "unknown policy":
        args += ["--policy", "nope"]
    else:
        url = f"http://127.0.0.1:{free_port()}"
    done = on_laptop(laptop, url, token, *args)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("agentweb-hook check: ")
    assert says in done.stderr


def test_a_hook_older_than_the_minimum_is_blocked_and_says_why(
    agentweb: str, token: str, laptop: Path, tmp_path: Path
) -> None:
    old_bin = tmp_path / "old-bin"
    old_bin.mkdir()
    (old_bin / "python3").symlink_to(laptop / "python3")
    old = old_bin / "agentweb-hook"
    old.write_text((laptop / "agentweb-hook").read_text().replace('"1.0"', '"0.9"', 1))
    old.chmod(0o755)
    event = '{"hook_event_name": "PreToolUse", "tool_name": "Bash"}'
    done = subprocess.run(
        ["agentweb-hook", "codex"], input=event, capture_output=True, text=True, check=False,
        env={"PATH": f"{old_bin}:/usr/bin:/bin", "AGENTWEB_URL": agentweb, "AGENTWEB_TOKEN": token},
    )  # fmt: skip
    assert done.returncode == 2
    assert "agentweb-hook 0.9 is older than 1.0, the oldest this server accepts" in done.stderr
    assert f"{agentweb}/api/hooks/agentweb-hook.py" in done.stderr
    assert not AgentSession.objects.exists()


def test_pip_installs_the_hook_package_offline_into_an_empty_venv(
    agentweb: str, token: str, tmp_path: Path
) -> None:
    """No index, no find-links, no configuration: the build needs nothing downloaded. pip
    is the test's own, installing into the laptop's Python (`--python`, as pipx's shared
    pip does), with build isolation as by default."""
    source = tmp_path / "agentweb_hook"
    shutil.copytree(ROOT / "agentweb_hook", source, ignore=shutil.ignore_patterns("__pycache__"))
    laptop = tmp_path / "venv"
    venv.create(laptop, with_pip=False)
    env = {"PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": os.devnull, "HOME": str(tmp_path)}
    install = [
        sys.executable, "-m", "pip", "--python", str(laptop / "bin" / "python"), "install",
        "--isolated", "--no-index", "--disable-pip-version-check", "--quiet", str(source),
    ]  # fmt: skip
    done = subprocess.run(install, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert not (source / "build").exists()
    script = laptop / "bin" / "agentweb-hook"
    assert script.read_text().startswith(f"#!{laptop}/bin/python")
    checked = on_laptop(laptop / "bin", agentweb, token, "agentweb-hook", "check")
    assert checked.returncode == 0, checked.stderr
