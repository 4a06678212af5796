"""Commands that always need a person: they change dependencies, remotes or history.

Only a program that really runs counts: `echo "npm install"` and `grep "pip install"`
run echo and grep. A package manager is matched by program and subcommand, never by
the word alone (`python3 manage.py install` and `make install` install nothing). git is
read with its global options understood, so `git log --grep push` is not a push, and a
`git-clean` binary is `git clean`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tools_app.core.policy.patterns import family, first_match, shape_of
from tools_app.core.shell.command_types import SimpleCommand
from tools_app.core.shell.commands import CommandAnalysis

APPROVE = "; a person must approve it"

# --- dependency installs -----------------------------------------------------------------

_CHANGES = "changes dependencies"
_RUNS = "runs a package it may download"


def _table(changes: str, runs: str = "") -> dict[str, str]:
    table = {sub.replace("_", " "): _CHANGES for sub in changes.split()}
    table.update({sub.replace("_", " "): _RUNS for sub in runs.split()})
    return table


_NPM = (
    "install i in ins inst insta instal isnt isnta isntal isntall add ci clean-install ic "
    "install-clean isntall-clean install-test it install-ci-test cit update up upgrade "
    "udpate uninstall remove rm r un unlink link ln rebuild rb dedupe ddp prune"
)
_SYSTEM = "install in add reinstall remove rm del erase purge upgrade dist-upgrade full-upgrade"
INSTALLERS: dict[str, dict[str, str]] = {
    "npm": _table(_NPM, "exec x init create"),
    "pnpm": _table(_NPM + " import fetch", "dlx create"),
    "yarn": _table(
        "install add remove upgrade up upgrade-interactive link global import", "dlx create"
    ),
    "bun": _table("install i add a remove rm update link", "x create"),
    "pip": _table("install uninstall download wheel"),
    "pipx": _table("install inject upgrade upgrade-all reinstall reinstall-all uninstall", "run"),
    "uv": _table(
        "add remove sync lock pip_install pip_uninstall pip_sync tool_install tool_upgrade",
        "tool_run",
    ),
    "poetry": _table("add remove install update lock sync"),
    "pdm": _table("add remove install update lock sync"),
    "pipenv": _table("install uninstall update sync lock"),
    "conda": _table("install create update remove"),
    "mamba": _table("install create update remove"),
    "micromamba": _table("install create update remove"),
    "gem": _table("install i uninstall update"),
    "bundle": _table("install update add"),
    "bundler": _table("install update add"),
    "cargo": _table("add install remove update binstall"),
    "go": _table("get install mod_tidy mod_download"),
    "composer": _table("install require update remove create-project"),
    "deno": _table("install add"),
    "dotnet": _table("add tool_install"),
    "apt": _table(_SYSTEM),
    "apt-get": _table(_SYSTEM),
    "aptitude": _table(_SYSTEM),
    "apk": _table(_SYSTEM),
    "dnf": _table(_SYSTEM + " update groupinstall localinstall"),
    "yum": _table(_SYSTEM + " update groupinstall localinstall"),
    "microdnf": _table(_SYSTEM + " update"),
    "zypper": _table(_SYSTEM + " update up"),
    "brew": _table("install uninstall reinstall upgrade tap"),
    "port": _table("install uninstall upgrade"),
    "snap": _table("install remove refresh"),
    "flatpak": _table("install uninstall update"),
}
ALWAYS_RUN_PACKAGES = frozenset({"npx", "pnpx", "bunx", "uvx"})
INSTALL_BY_DEFAULT = frozenset({"yarn", "bundle", "bundler"})
_PYTHON_MODULES = frozenset({"pip", "pipx", "uv", "poetry", "pdm", "pipenv", "conda"})


def _python_module(args: Sequence[str]) -> tuple[str, tuple[str, ...]] | None:
    """`python -m pip install x` is `pip install x`: the module and its arguments."""
    for i, arg in enumerate(args):
        if arg == "-m" and i + 1 < len(args):
            return args[i + 1], tuple(args[i + 2 :])
        if arg.startswith("-m") and len(arg) > 2:
            return arg[2:], tuple(args[i + 1 :])
        if not arg.startswith("-"):
            return None
    return None


def _subcommand_candidates(args: Sequence[str]) -> list[list[str]]:
    """The words that may be the subcommand, each with the words after it.

    Options before the subcommand may take a value (`npm --prefix web install`), and
    which ones do differs by tool and version; so every word right after an option is
    a candidate, up to the first word that cannot be an option's value.
    """
    words = [(i, arg) for i, arg in enumerate(args) if not arg.startswith("-") or arg == "-"]
    candidates: list[list[str]] = []
    for i, word in words:
        rest = [w for j, w in words if j > i]
        candidates.append([word, *rest])
        previous = args[i - 1] if i > 0 else ""
        if not (previous.startswith("-") and "=" not in previous):
            break
    return candidates


def _subcommand(program: str, args: Sequence[str]) -> tuple[str, str] | None:
    """(subcommand, what it does) for a package manager's install-like subcommand."""
    table = INSTALLERS.get(program, {})
    candidates = _subcommand_candidates(args)
    if not candidates:
        return ("", _CHANGES) if program in INSTALL_BY_DEFAULT else None
    for words in candidates:
        for candidate in (" ".join(words[:2]), words[0]):
            if candidate in table:
                return candidate, table[candidate]
    return None


def install_reason(command: SimpleCommand) -> str | None:
    """What a package manager command does to dependencies, or None."""
    program, args = family(command.program), command.args
    if any(w.startswith("uv run --with") for w in command.wrappers):
        return f"{_CHANGES} (uv run --with)"
    if program == "python":
        module = _python_module(args)
        if module is None or family(module[0]) not in _PYTHON_MODULES:
            return None
        program, args = family(module[0]), module[1]
    if program in ALWAYS_RUN_PACKAGES:
        return f"{_RUNS} ({program})"
    if program == "pacman" and any(re.match(r"^-[A-Za-z]*[SUR]", a) for a in args):
        return f"{_CHANGES} (pacman)"
    if program == "go" and args[:1] == ("run",) and any("@" in a for a in args[1:]):
        return f"{_RUNS} (go run PACKAGE@VERSION)"
    found = _subcommand(program, args)
    if found is None:
        return None
    subcommand, effect = found
    return f"{effect} ({' '.join(filter(None, (program, subcommand)))})"


_NODE_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun", "npx", "pnpx", "bunx"})


def install_scripts(command: SimpleCommand) -> str | None:
    """A reviewer approving `npm install` should know what else it runs, and from where."""
    if family(command.program) not in _NODE_MANAGERS or "--ignore-scripts" in command.args:
        return None
    if install_reason(command) is None:
        return None
    return (
        "runs the packages' install scripts through a shell that the workspace's "
        ".npmrc / .yarnrc can choose (script-shell)"
    )


# --- git ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GitCommand:
    """A git command line split into its global options, subcommand and arguments."""

    global_options: tuple[str, ...]
    subcommand: str
    args: tuple[str, ...]


_GIT_OPTIONS_WITH_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"}
    | {"--attr-source"}
)
_GIT_RISKY_OPTIONS = {
    "-c": "sets git configuration for this command (git -c), which can run programs",
    "--config-env": "sets git configuration from the environment (git --config-env), "
    "which can run programs",
    "--exec-path": "runs git's subcommands from another directory (git --exec-path)",
    "--git-dir": "points git at another repository (--git-dir)",
    "--work-tree": "points git at another work tree (--work-tree)",
    "--super-prefix": "sets git's internal --super-prefix",
}


def split_git(command: SimpleCommand) -> GitCommand | None:
    """The git command in `command` (`git …`, `git-clean …`), or None when it is not git."""
    program = command.program
    if program.startswith("git-") and len(program) > 4:
        return GitCommand((), program[4:], command.args)
    if program != "git":
        return None
    args = command.args
    i = 0
    options: list[str] = []
    while i < len(args) and args[i].startswith("-"):
        options.append(args[i])
        i += 2 if args[i] in _GIT_OPTIONS_WITH_VALUE else 1
    subcommand = args[i] if i < len(args) else ""
    return GitCommand(tuple(options), subcommand, tuple(args[i + 1 :]))


def _git_option_reason(options: Sequence[str]) -> str | None:
    for option in options:
        name = option.split("=", 1)[0]
        if name.startswith("-c") and not name.startswith("--"):
            name = "-c"
        if name == "--exec-path" and "=" not in option:
            continue
        if name in _GIT_RISKY_OPTIONS:
            return _GIT_RISKY_OPTIONS[name]
    return None


def _short_flags(args: Sequence[str]) -> set[str]:
    """Letters of short options and whole long options (`-fdx` → f, d, x)."""
    flags: set[str] = set()
    for arg in args:
        if arg.startswith("--"):
            flags.add(arg.split("=", 1)[0])
        elif arg.startswith("-") and len(arg) > 1:
            flags.update(arg[1:])
    return flags


_GIT_RUNS_PROGRAM = {"--upload-pack", "--receive-pack", "--exec", "--extcmd"}
_GIT_ALWAYS = {
    "push": "pushes to a remote (git push)",
    "checkout-index": "writes files over the work tree (git checkout-index)",
    "update-ref": "rewrites a ref directly (git update-ref)",
    "filter-branch": "rewrites history (git filter-branch)",
    "filter-repo": "rewrites history (git filter-repo)",
    "prune": "deletes unreachable objects (git prune)",
    "credential": "reads or stores credentials (git credential)",
}


def _git_subcommand_reason(git: GitCommand) -> str | None:
    sub, args = git.subcommand, git.args
    flags = _short_flags(args)
    if sub in _GIT_ALWAYS:
        return _GIT_ALWAYS[sub]
    if flags & _GIT_RUNS_PROGRAM or (sub == "clone" and "u" in flags):
        return f"runs a program named in its options (git {sub})"
    if sub == "grep" and flags & {"O", "--open-files-in-pager"}:
        return "opens results in a program named in its options (git grep -O)"
    if sub == "difftool" and flags & {"x"}:
        return "runs a program named in its options (git difftool -x)"
    if sub == "bisect" and args[:1] == ("run",):
        return "runs a command for each commit (git bisect run)"
    return _git_destructive_reason(sub, args, flags)


def _git_destructive_reason(sub: str, args: tuple[str, ...], flags: set[str]) -> str | None:
    if sub == "clean" and not flags & {"n", "--dry-run"}:
        return "deletes untracked files (git clean)"
    if sub == "reset" and flags & {"--hard", "--merge"}:
        return "discards changes (git reset --hard)"
    if sub == "checkout" and (flags & {"f", "--force"} or _names_paths(args)):
        return "discards changes in the work tree (git checkout -f / -- PATH)"
    if sub == "restore" and not (flags & {"S", "--staged"} and not flags & {"W", "--worktree"}):
        return "discards changes in the work tree (git restore)"
    if sub == "rebase" and "--abort" not in flags:
        return "rewrites history (git rebase)"
    if sub == "branch" and flags & {"D", "d", "--delete", "M", "C", "f", "--force"}:
        return "deletes or overwrites a branch (git branch -d/-D/-M)"
    if sub == "reflog" and args[:1] in {("expire",), ("delete",)}:
        return "expires reflog entries, the way back to lost commits (git reflog expire)"
    if sub == "gc" and any(f.startswith("--prune") for f in flags):
        return "prunes unreachable objects (git gc --prune)"
    if sub == "stash" and args[:1] in {("drop",), ("clear",)}:
        return f"drops stashed changes (git stash {args[0]})"
    if sub == "worktree" and args[:1] in {("remove",), ("prune",)}:
        return f"removes a work tree (git worktree {args[0]})"
    if sub == "submodule" and args[:1] not in {(), ("status",), ("summary",)}:
        return f"runs submodule commands (git submodule {args[0]})"
    if sub == "config" and _config_writes(args, flags):
        return "changes git configuration (git config)"
    return None


def _names_paths(args: tuple[str, ...]) -> bool:
    if "--" in args and args.index("--") < len(args) - 1:
        return True
    return any(a in {".", ":/", "*"} for a in args)


_CONFIG_READS = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "l", "--list"}


def _config_writes(args: tuple[str, ...], flags: set[str]) -> bool:
    words = [a for a in args if not a.startswith("-")]
    if words[:1] in (["get"], ["list"]):
        return False
    if flags & _CONFIG_READS:
        return False
    return len(words) != 1 or bool(flags - {"--global", "--local", "--show-origin"})


def git_reasons(command: SimpleCommand) -> list[str]:
    """Why a git command needs a person: its global options, then its subcommand."""
    git = split_git(command)
    if git is None:
        return []
    found = (_git_option_reason(git.global_options), _git_subcommand_reason(git))
    return [reason for reason in found if reason]


_GIT_ENV = re.compile(r"^GIT_[A-Z0-9_]*=")


def git_environment(command: SimpleCommand) -> str | None:
    """`GIT_DIR=x git …`, `env GIT_SSH_COMMAND=… git`, `export GIT_…`: git's environment."""
    words = command.assignments
    if command.program in {"export", "declare", "typeset", "readonly", "local"}:
        words = words + command.args
    found = next((w for w in words if _GIT_ENV.match(w)), None)
    if found is None:
        return None
    return (
        f"sets git's environment ({found.split('=', 1)[0]}), which can redirect git or run programs"
    )


# --- deleting the workspace ------------------------------------------------------------

_WHOLE_WORKSPACE = frozenset({".", "*", ".*", ".[!.]*", "..?*"})


def deletes_workspace(command: SimpleCommand) -> str | None:
    """`rm -rf .` or `rm -rf *`: everything in the workspace at once."""
    shape = shape_of(command)
    if command.program != "rm" or "r" not in shape.flags:
        return None
    for target in shape.positionals:
        if posixpath.normpath(target.removeprefix("./") or ".") in _WHOLE_WORKSPACE:
            return f"deletes the whole workspace ({target})"
    return None


# --- all of it ---------------------------------------------------------------------------


def command_approval_reasons(command: SimpleCommand) -> list[str]:
    """Every built-in reason one simple command needs a person (for the preview too)."""
    found = (
        install_reason(command),
        install_scripts(command),
        *git_reasons(command),
        git_environment(command),
        deletes_workspace(command),
    )
    return [reason for reason in found if reason]


def builtin_approval_reason(analysis: CommandAnalysis) -> str | None:
    """Why one of the built-in approval commands needs a person, or None."""
    for command in analysis.commands:
        reasons = command_approval_reasons(command)
        if reasons:
            return f"`{command.text}` {reasons[0]}{APPROVE}"
    return None


def policy_approval_reason(patterns: tuple[str, ...], analysis: CommandAnalysis) -> str | None:
    """Why one of the policy's own approval commands matches, or None."""
    hit = first_match(patterns, analysis)
    if hit:
        pattern, matched = hit
        return f"`{matched}` matches the approval command `{pattern}`; a person must approve it"
    return None
