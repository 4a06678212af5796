"""Which hosts a command needs, by its class: `npm install` the npm registry, `pip
install` PyPI, `git fetch` its remote's host, `cargo build` crates.io, `go get` the Go
module proxy.

A policy's `command_hosts` is one line per class, `CLASS HOST [HOST …]`
(`DEFAULT_COMMAND_HOSTS` when it names none). The class of a simple command is read
from its parsed argv (`core/shell/`, the parsing the policy judges commands by). A
compound command gets the union of its parts' hosts only when every part is known: a
class above, or a program that reaches no network (`cd`, `echo`, `mkdir` …); anything
else (`node build.js && npm install`) gets no host from its class, because the grant is
the whole command's, and an unknown program would share it. No Django here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from tools_app.core.egress.patterns import covers, host_pattern_problem, normalised
from tools_app.core.shell.command_types import SimpleCommand

__all__ = [
    "COMMAND_CLASSES",
    "DEFAULT_COMMAND_HOSTS",
    "class_hosts",
    "command_class",
    "command_hosts_problem",
    "command_hosts_table",
]

# The subcommands of each class that fetch from its registry.
_SUBCOMMANDS: dict[str, dict[str, frozenset[str]]] = {
    "npm": {
        "npm": frozenset({"install", "i", "ci", "add", "update"}),
        "yarn": frozenset({"", "install", "add"}),
        "pnpm": frozenset({"install", "i", "add", "update"}),
    },
    "pip": {
        "pip": frozenset({"install", "download"}),
        "pip3": frozenset({"install", "download"}),
    },
    "git": {"git": frozenset({"fetch", "clone", "pull", "ls-remote"})},
    "cargo": {
        "cargo": frozenset(
            {"fetch", "build", "check", "install", "update", "add", "vendor", "generate-lockfile"}
        )
    },
    "go": {"go": frozenset({"get", "install", "build", "mod", "list"})},
}
COMMAND_CLASSES: tuple[str, ...] = tuple(_SUBCOMMANDS)

DEFAULT_COMMAND_HOSTS: tuple[str, ...] = (
    "npm registry.npmjs.org",
    "pip pypi.org files.pythonhosted.org",
    # When a git command's remote has no host agentweb can read (a remote name whose
    # URL is not in the workspace's .git/config), these.
    "git github.com gitlab.com",
    "cargo crates.io static.crates.io index.crates.io",
    "go proxy.golang.org sum.golang.org",
)

# Programs that reach no network of their own: a command made of them and of known
# classes still gets its classes' hosts (`cd web && npm ci`).
_OFFLINE = frozenset(
    {"cd", "pushd", "popd", "true", "false", "echo", "printf", "pwd", "mkdir", "ls", "test"}
)
_GIT_OPTIONS_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree"})
_URL_HOST = re.compile(r"^(?:[a-z][a-z0-9+.-]*://(?:[^@/]*@)?([^/:?#]+)|[^@/:]+@([^/:]+):)", re.I)


def command_hosts_problem(line: str) -> str | None:
    """Why a `command_hosts` line cannot be used, or None."""
    words = line.split()
    if not words or words[0] not in COMMAND_CLASSES:
        known = ", ".join(COMMAND_CLASSES)
        return f"{line!r} must start with a command class ({known}), then its hosts"
    for host in words[1:]:
        if problem := host_pattern_problem(host):
            return problem
    return None


def command_hosts_table(lines: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The policy's lines as {class: hosts}; a class named twice gets both lists."""
    table: dict[str, tuple[str, ...]] = {}
    for line in lines:
        words = line.split()
        if words:
            table[words[0]] = table.get(words[0], ()) + tuple(normalised(h) for h in words[1:])
    return table


def command_class(command: SimpleCommand) -> str | None:
    """The class of one simple command, "offline" for a program with no network of its
    own, or None when it is not known."""
    if command.program in _OFFLINE or not command.argv:
        return "offline"
    argv = _without_module_runner(command)
    program, subcommand = _program_and_subcommand(argv)
    if argv[:2] == ("uv", "pip"):
        program, subcommand = "pip", _first_word(argv[2:])
    elif argv[:1] == ("uv",) and subcommand in {"sync", "add", "lock"}:
        return "pip"
    for name, programs in _SUBCOMMANDS.items():
        if subcommand in programs.get(program, frozenset()) and (subcommand or len(argv) == 1):
            return name
    return None


def _without_module_runner(command: SimpleCommand) -> tuple[str, ...]:
    """`python -m pip install x` as `pip install x`."""
    argv = (command.program, *command.args)
    if re.fullmatch(r"python[0-9.]*", argv[0]) and argv[1:3] == ("-m", "pip"):
        return ("pip", *argv[3:])
    return argv


def _program_and_subcommand(argv: tuple[str, ...]) -> tuple[str, str]:
    program, words = argv[0], list(argv[1:])
    while program == "git" and words and words[0] in _GIT_OPTIONS_WITH_VALUE:
        words = words[2:]
    return program, _first_word(tuple(words))


def _first_word(words: tuple[str, ...]) -> str:
    return next((word for word in words if not word.startswith("-")), "")


def class_hosts(
    commands: Iterable[SimpleCommand], table: Mapping[str, tuple[str, ...]], workspace: Path
) -> tuple[str, ...]:
    """The hosts a whole command gets from its classes: the union when every simple
    command is known, else none."""
    hosts: list[str] = []
    for command in commands:
        found = command_class(command)
        if found is None:
            return ()
        if found == "git":
            hosts += git_hosts(command, table.get("git", ()), workspace)
        elif found != "offline":
            hosts += table.get(found, ())
    return tuple(dict.fromkeys(hosts))


def git_hosts(command: SimpleCommand, listed: tuple[str, ...], workspace: Path) -> tuple[str, ...]:
    """The host of the remote a git command reaches, else the policy's git list.

    A remote's name (`origin`, or none) is its URL in the workspace's own .git/config,
    which agentweb wrote when it cloned the session's repository: its host is the
    session's git host. A URL typed into the command is the agent's choice, so its host
    is granted only when the policy's git list names it or it is one of the workspace's
    remotes; any other is left to the proxy, which refuses it and says how to allow it.
    """
    remote = _remote_word(command)
    remotes = _remote_urls(workspace)
    typed = url_host(remote)
    if typed:
        trusted = covers(listed, typed) or typed in {url_host(u) for u in remotes.values()}
        return (typed,) if trusted and host_pattern_problem(typed) is None else listed
    host = url_host(remotes.get(remote, ""))
    return (host,) if host and host_pattern_problem(host) is None else listed


def _remote_word(command: SimpleCommand) -> str:
    """The remote a git fetch/clone/pull/ls-remote names: its first operand, or origin."""
    _, subcommand = _program_and_subcommand((command.program, *command.args))
    words = command.args[command.args.index(subcommand) + 1 :] if subcommand else ()
    return next((w for w in words if not w.startswith("-")), "origin")


def url_host(url: str) -> str:
    """The host of a git URL (`https://host/x`, `ssh://git@host/x`, `git@host:x`), or ""."""
    match = _URL_HOST.match(url.strip())
    return normalised(match[1] or match[2]) if match else ""


def _remote_urls(workspace: Path) -> dict[str, str]:
    """Each remote's URL in the workspace's own .git/config (none when unreadable)."""
    try:
        text = (workspace / ".git" / "config").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    found: dict[str, str] = {}
    for section in re.finditer(r'^\[remote "([^"\n]+)"\]\s*$(.*?)(?=^\[|\Z)', text, re.M | re.S):
        url = re.search(r"^\s*url\s*=\s*(\S+)", section[2], re.M)
        if url:
            found[section[1]] = url[1]
    return found
