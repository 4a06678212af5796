"""The environment every git command of agentweb runs in: nothing of the host's git setup.

No GIT_* variable is inherited, no system or global config is read, nothing prompts, and
HOME is an empty directory of agentweb's own (a shared /tmp could hold someone's
`.ssh/config`): made once per installation under AGENTWEB_VAR (`use_home`, from the app),
else a temporary one removed at exit.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["git_env", "private_home", "use_home"]

_home: dict[str, str] = {}


def use_home(path: Path) -> None:
    """Make `path` git's empty HOME: once per installation (the app names
    AGENTWEB_VAR/git-home), kept there, so that no process leaves one behind in the temp
    dir (a Celery pool process ends with os._exit: nothing it registers at exit runs)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.is_symlink() or not path.is_dir():
        raise RuntimeError(f"git's HOME {path} must be a directory of agentweb's own")
    _home["path"] = str(path)


def private_home() -> str:
    """An empty HOME of our own: a shared /tmp could hold someone's .ssh/config. Without
    `use_home` (a script without Django), a temporary one that is removed at exit."""
    if "path" not in _home:
        made = tempfile.mkdtemp(prefix="agentweb-git-home-")
        atexit.register(shutil.rmtree, made, ignore_errors=True)
        _home["path"] = made
    return _home["path"]


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: nothing GIT_* is inherited, no prompts, no global config."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": private_home(),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_EDITOR": ":",
        "GIT_SEQUENCE_EDITOR": ":",
    }
    env.update(extra or {})
    return env
