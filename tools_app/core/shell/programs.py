"""What programs do: the knowledge the command analysis applies to each simple command.

Which programs are interpreters, which only read (the fast path), which take data
rather than a command as arguments, which run code hidden in an argument or cannot be
checked at all. These are tables and predicates about one `SimpleCommand`; walking the
shell syntax that finds those commands is commands.py's job.
"""

from __future__ import annotations

import re

from tools_app.core.shell.command_types import SimpleCommand
from tools_app.core.shell.wrappers import (
    SHELLS,
    WRAPPERS,
    awk_runs_commands,
    inline_code_flag,
    program_name,
    sed_runs_commands,
)

INTERPRETERS = frozenset(
    {"python", "perl", "ruby", "node", "nodejs", "php", "lua", "deno", "bun", "osascript"}
)
_CODE_FLAGS = frozenset({"-c", "-e", "-m", "-E", "-p", "-r", "--eval", "--print"})


def is_interpreter(program: str) -> bool:
    """Shells and script interpreters, including versioned names like python3.12."""
    base = re.sub(r"[\d.]+$", "", program)
    return program in SHELLS or base in INTERPRETERS or base in SHELLS


def reads_code_from_stdin(command: SimpleCommand) -> bool:
    """A shell or interpreter given no script: it runs whatever arrives on stdin."""
    if not is_interpreter(command.program):
        return False
    rest = [arg for arg in command.args if arg != "-"]
    if any(arg in _CODE_FLAGS or arg.startswith("-c") for arg in rest):
        return False
    return all(arg.startswith(("-", "+")) for arg in rest)


_OPAQUE_PROGRAMS = {
    "source": "uses source, which runs a file's commands without them being checked",
    ".": "uses `.` (source), which runs a file's commands without them being checked",
    "trap": "sets a trap whose command runs later and cannot be checked",
    "alias": "defines an alias, which changes what later commands run",
    "parallel": "uses GNU parallel, which builds its commands at run time",
}


def command_notes(command: SimpleCommand) -> list[str]:
    """Opaque reasons that belong to a single command."""
    notes: list[str] = []
    if 0 in command.dynamic:
        notes.append(f"runs a command whose name is only known at run time ({command.argv[0]})")
    reason = _OPAQUE_PROGRAMS.get(command.program)
    if reason:
        notes.append(reason)
    if command.program == "xargs" or ("xargs" in command.wrappers and not reads_only(command)):
        notes.append("lets xargs pass arguments that are only known at run time")
    if "parallel" in command.wrappers:
        notes.append(_OPAQUE_PROGRAMS["parallel"])
    notes.extend(_hidden_code(command))
    return notes


def _hidden_code(command: SimpleCommand) -> list[str]:
    """Code inside an argument: `python -c`, `awk '{system(…)}'`, `sed 'e …'`."""
    if not command.argv:
        return []
    flag = inline_code_flag(command.argv)
    if flag is not None:
        return [f"runs {command.program} code given on the command line ({flag}), unchecked"]
    if awk_runs_commands(command.argv):
        return [f"runs an {command.program} program that starts shell commands (system or |)"]
    if sed_runs_commands(command.argv):
        return [f"runs a {command.program} script whose `e` command or flag starts shell commands"]
    return []


# Programs that only read (the fast path), unless given an option that writes a file
# or runs a program; and below, programs whose arguments are data, never a command.
READ_ONLY_PROGRAMS = frozenset(
    {"ls", "cat", "head", "tail", "less", "more", "wc", "grep", "egrep", "fgrep", "rg"}
    | {"ag", "ack", "diff", "cmp", "file", "stat", "du", "df", "pwd", "echo", "printf"}
    | {"which", "type", "whereis", "whatis", "tree", "sort", "cut", "tr", "nl", "true"}
    | {"false", "test", "[", "id", "whoami", "uname", "printenv", "basename", "dirname"}
    | {"realpath", "readlink", "md5sum", "sha1sum", "sha256sum", "cksum", "column", "jq"}
    | {"od", "hexdump", "strings", "ps", "free", "uptime", "man", "help", "seq", "comm"}
    | {"join", "paste", "fold", "expand", "unexpand", "rev", "tac", "fmt", "look", "cd"}
    | {"pushd", "popd"}
)
_READ_ONLY_SUBCOMMANDS = {
    "git": frozenset(
        {"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse", "describe"}
        | {"shortlog", "ls-tree", "cat-file", "rev-list", "whatchanged", "version"}
    ),
}
_WRITES_OR_RUNS_WITH = {
    "sort": ("-o", "--output"),
    "tree": ("-o",),
    "file": ("-C",),
    "rg": ("--pre",),
    "ag": ("--pager",),
    "man": ("-P", "--pager", "-H", "--html"),
    "git": ("--output", "-O", "--open-files-in-pager", "--ext-diff"),
}
_DATA_PROGRAMS = READ_ONLY_PROGRAMS | frozenset(
    {"git", "make", "apt", "apt-get", "dpkg", "rpm", "brew", "systemctl", "service", "kill"}
    | {"pkill", "pgrep", "killall", "hash", "complete", "unalias", "unset", "export", "ln"}
    | {"declare", "local", "readonly", "typeset", "read", "set", "mkdir", "touch", "cp"}
    | {"mv", "rm", "chmod", "chown", "install", "tar", "zip", "unzip", "gzip", "ssh", "scp"}
    | {"rsync", "docker", "podman", "kubectl", "pip", "npm", "pnpm", "yarn", "cargo", "go"}
    | {"gem", "uv", "poetry", "pytest", "tox", "nox", "tee", "find", "xargs", "sed", "awk"}
    | {"apropos", "info", "sudo", "doas", "su", "tmux", "screen", "ldd", "tsp", "at"}
)
_COMMAND_WORDS = SHELLS | frozenset(
    {"rm", "dd", "mv", "cp", "chmod", "chown", "find", "xargs", "git", "curl", "wget", "eval"}
    | {"sudo", "env", "exec", "python", "python3", "node", "perl", "ruby", "php", "npm", "npx"}
    | {"pip", "pip3", "shred", "truncate", "mkfs", "tee", "kill", "nc", "socat", "ssh"}
)


_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "&1", "&2"})


def reads_only(command: SimpleCommand) -> bool:
    """A known read-only program (or git subcommand) with no redirection that writes."""
    if any(r.writes and r.target not in _HARMLESS_TARGETS for r in command.redirects):
        return False
    if command.dynamic or command.assignments:
        return False
    risky = _WRITES_OR_RUNS_WITH.get(command.program, ())
    if risky and any(arg.startswith(risky) for arg in command.args):
        return False
    if command.program in READ_ONLY_PROGRAMS:
        return True
    subcommands = _READ_ONLY_SUBCOMMANDS.get(command.program)
    first = next((a for a in command.args if not a.startswith("-")), "")
    return subcommands is not None and first in subcommands


def unknown_wrapper_tail(command: SimpleCommand) -> tuple[str, ...] | None:
    """`mywrap rm -rf x`: an unknown program whose first word names a command."""
    program = command.program
    if not command.argv or program in _DATA_PROGRAMS or program in WRAPPERS:
        return None
    if is_interpreter(program) or program in _OPAQUE_PROGRAMS:
        return None
    for i, arg in enumerate(command.args):
        if arg.startswith("-"):
            continue
        return command.args[i:] if program_name(arg) in _COMMAND_WORDS else None
    return None
