"""Commands that always need a person: they change dependencies, remotes or history.

Only a program that really runs counts: `echo "npm install"` and `grep "pip install"`
run echo and grep. Package managers are matched as command patterns (see patterns.py);
git is read with its global options understood, so `git log --grep push` is not a push.
"""

from __future__ import annotations

from dataclasses import dataclass

from tools_app.policy.commands import CommandAnalysis, SimpleCommand
from tools_app.policy.patterns import first_match, shape_of

APPROVE = "; a person must approve it"


def _each(programs: str, subcommands: str) -> tuple[str, ...]:
    return tuple(f"{p} {s}" for p in programs.split() for s in subcommands.split(","))


_NODE = "install,i,add,remove,rm,uninstall,update,upgrade,ci,link"
BUILTIN_APPROVAL_COMMANDS: tuple[str, ...] = (
    *_each("npm yarn pnpm", _NODE),
    *_each("pip", "install,uninstall,download"),
    *_each("python -m pip", "install,uninstall,download"),
    *_each("uv", "pip install,pip uninstall,add,remove,sync,lock"),
    *_each("poetry", "add,remove,install,update,lock"),
    *_each("cargo", "add,remove,install,update"),
    *_each("go", "get,install,mod tidy,mod download"),
    *_each("gem", "install,uninstall"),
    *_each("bundle", "install,update,add"),
    *_each("composer", "install,require,update,remove"),
    *_each("apt apt-get", "install,remove,purge"),
    *_each("brew", "install,uninstall"),
)

_DEPENDENCY_REASON = "changes dependencies ({pattern}); a person must approve it"


@dataclass(frozen=True)
class _Git:
    """A git command line split into its global options, subcommand and arguments."""

    global_options: tuple[str, ...]
    subcommand: str
    args: tuple[str, ...]


_GIT_OPTIONS_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace"})


def _split_git(command: SimpleCommand) -> _Git:
    args = command.args
    i = 0
    options: list[str] = []
    while i < len(args) and args[i].startswith("-"):
        options.append(args[i])
        i += 2 if args[i] in _GIT_OPTIONS_WITH_VALUE else 1
    subcommand = args[i] if i < len(args) else ""
    return _Git(tuple(options), subcommand, tuple(args[i + 1 :]))


def _git_reason(git: _Git) -> str | None:
    for option in git.global_options:
        if option == "-c" or option.startswith("-c"):
            return "sets git configuration for this command (git -c)"
        if option.split("=", 1)[0] in {"--git-dir", "--work-tree"}:
            return f"points git at another repository or work tree ({option.split('=')[0]})"
    sub, args = git.subcommand, git.args
    if sub == "push":
        return "pushes to a remote (git push)"
    if sub == "reset" and "--hard" in args:
        return "discards changes (git reset --hard)"
    if sub in {"checkout", "restore"} and ("." in args or ":/" in args):
        return f"discards changes in the whole tree (git {sub} .)"
    if sub == "clean":
        return "deletes untracked files (git clean)"
    if sub == "config":
        return "changes git configuration (git config)"
    return None


def builtin_approval_reason(analysis: CommandAnalysis) -> str | None:
    """Why one of the built-in approval commands needs a person, or None."""
    for command in analysis.commands:
        if command.program == "git":
            reason = _git_reason(_split_git(command))
            if reason:
                return f"`{command.text}` {reason}{APPROVE}"
        if command.program == "yarn" and not shape_of(command).positionals:
            return f"`{command.text}` installs dependencies (yarn){APPROVE}"
    hit = first_match(BUILTIN_APPROVAL_COMMANDS, analysis)
    if hit:
        pattern, matched = hit
        return f"`{matched}` " + _DEPENDENCY_REASON.format(pattern=pattern)
    return None


def policy_approval_reason(patterns: tuple[str, ...], analysis: CommandAnalysis) -> str | None:
    """Why one of the policy's own approval commands matches, or None."""
    hit = first_match(patterns, analysis)
    if hit:
        pattern, matched = hit
        return f"`{matched}` matches the approval command `{pattern}`; a person must approve it"
    return None
