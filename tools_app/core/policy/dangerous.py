"""Commands that are never run, whatever the policy says.

Each check looks at the analysed command (wrappers already peeled off, every simple
command found) and returns a sentence naming the part that is dangerous, or None.
They are the built-in deny checks for `run_command`, applied before any allow rule.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from tools_app.core.policy.patterns import normalise_word, shape_of
from tools_app.core.shell.command_types import SimpleCommand
from tools_app.core.shell.commands import CommandAnalysis
from tools_app.core.shell.programs import is_interpreter, reads_code_from_stdin
from tools_app.core.shell.wrappers import SHELLS

_FORK_BOMB = re.compile(r"([\w:.\-]+)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&")
_PERL_FORK = re.compile(r"\bfork\s+while\s+fork\b")
_DEV_SOCKET = re.compile(r"/dev/(tcp|udp)/")
BLOCK_DEVICE = re.compile(
    r"^/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|r?disk\d|mapper/|dm-\d"
    r"|md\d|loop\d|sr\d|fd\d|mem$|kmem$|port$)"
)
_SYSTEM_DIRS = frozenset(
    {"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt"}
    | {"/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var", "~", "$HOME", "${HOME}"}
)
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "lwp-download"})
_DECODE_FLAGS = {"base64": "d", "base32": "d", "basenc": "d", "xxd": "r", "uudecode": ""}


_HOME_OF = re.compile(r"^~[\w.-]*$")


def is_root_like(word: str) -> bool:
    """`/`, `/*`, `//`, `~/`, `~user`, `$HOME/.`, `/{,}`, and top-level system directories."""
    trimmed = word
    while True:
        stripped = re.sub(r"(/\*|/\.|/)$", "", trimmed)
        if stripped == trimmed:
            break
        trimmed = stripped
    if not trimmed or _HOME_OF.match(trimmed):
        return True
    if normalise_word(trimmed) in _SYSTEM_DIRS:
        return True
    return _globs_at_top(trimmed)


def _globs_at_top(word: str) -> bool:
    """`/.*`, `/u*`, `~/{a,b}`: a pattern in the first segment reaches top-level entries."""
    for base in ("/", "~/", "$HOME/", "${HOME}/"):
        if word.startswith(base):
            first = word[len(base) :].split("/", 1)[0]
            return any(char in first for char in "*?[{")
    return False


def _raw_text(analysis: CommandAnalysis) -> str | None:
    if _FORK_BOMB.search(analysis.text) or _PERL_FORK.search(analysis.text):
        return "is a fork bomb"
    socket = _DEV_SOCKET.search(analysis.text)
    if socket:
        return f"opens a raw network socket ({socket.group(0)}), as reverse shells do"
    return None


def _recursive_delete(command: SimpleCommand, in_root: bool = False) -> str | None:
    shape = shape_of(command)
    program = command.program
    if program == "rm" and "r" in shape.flags:
        targets = [t for t in shape.positionals if is_root_like(t) or (in_root and _relative(t))]
        if targets:
            where = " after changing to a top-level directory" if in_root else ""
            return f"`{command.text}` deletes {targets[0]} recursively{where}"
        return _unknown_delete_target(command)
    if _find_deletes_root(command, shape.positionals):
        return f"`{command.text}` deletes files from {shape.positionals[0]}"
    if program in {"chmod", "chown", "chgrp"} and "R" in shape.flags:
        targets = [t for t in shape.positionals[1:] if is_root_like(t)]
        if targets:
            return f"`{command.text}` changes {targets[0]} recursively"
    return None


def _unknown_delete_target(command: SimpleCommand) -> str | None:
    """`rm -rf $X`, `rm -rf "$(pwd)"/..`: what is deleted is only known at run time."""
    for index, arg in enumerate(command.argv):
        if index and not arg.startswith("-") and index in command.dynamic:
            return (
                f"`{command.text}` deletes recursively a path only known at run time ({arg}); "
                "name the path instead"
            )
        if index and not arg.startswith("-") and _above_workspace(arg):
            return f"`{command.text}` deletes {arg} recursively, above the workspace"
    return None


def _above_workspace(word: str) -> bool:
    path = posixpath.normpath(word)
    return path == ".." or path.startswith("../")


def _no_preserve_root(command: SimpleCommand) -> str | None:
    """`--no-preserve-root` only serves to let rm, chmod or chown act on `/`."""
    if any(a.startswith("--no-preserve-root") for a in command.args):
        return f"`{command.text}` passes --no-preserve-root, which only serves to act on /"
    return None


def _relative(word: str) -> bool:
    return not word.startswith(("/", "~", "$"))


def _deletes_after_cd(analysis: CommandAnalysis) -> str | None:
    """`cd / && rm -rf *`: after `cd` to a top-level directory, relative targets are too."""
    in_root = False
    for command in analysis.commands:
        if command.program in {"cd", "pushd"}:
            targets = [a for a in command.args if not a.startswith("-")]
            in_root = not targets or is_root_like(targets[0])
        elif in_root:
            reason = _recursive_delete(command, in_root=True)
            if reason:
                return reason
    return None


def _find_deletes_root(command: SimpleCommand, positionals: tuple[str, ...]) -> bool:
    if command.program != "find" or not positionals or not is_root_like(positionals[0]):
        return False
    args = command.args
    return "-delete" in args or any(
        arg in {"-exec", "-execdir", "-ok"} and i + 1 < len(args) and args[i + 1].endswith("rm")
        for i, arg in enumerate(args)
    )


def _disk_writes(command: SimpleCommand) -> str | None:
    program = command.program
    if program.startswith("mkfs") or program in {"wipefs", "mke2fs", "mkswap"}:
        return f"`{command.text}` formats or wipes a disk"
    devices = [a for a in command.args if BLOCK_DEVICE.match(a.removeprefix("of="))]
    if program == "dd" and any(a.startswith("of=") for a in devices):
        return f"`{command.text}` writes to a block device"
    if devices and program in {"shred", "fdisk", "sfdisk", "parted", "blkdiscard", "cp", "tee"}:
        return f"`{command.text}` writes to a block device ({devices[0]})"
    for redirect in command.redirects:
        if redirect.writes and BLOCK_DEVICE.match(redirect.target):
            return f"`{command.text}` redirects output onto the block device {redirect.target}"
    return None


def _remote_shell(command: SimpleCommand) -> str | None:
    if command.program in {"nc", "ncat", "netcat", "nc.traditional", "nc.openbsd"}:
        for arg in command.args:
            if arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) & {"e", "c"}:
                return f"`{command.text}` hands a shell to a network connection ({arg})"
    if command.program == "socat" and any(
        re.match(r"^(exec|system):", a, re.IGNORECASE) for a in command.args
    ):
        return f"`{command.text}` connects a program to a network socket"
    return None


def produces_code(command: SimpleCommand) -> bool:
    """Downloads and decoders: their output is code nobody has read."""
    program = command.program
    if program in DOWNLOADERS:
        return True
    if program in _DECODE_FLAGS:
        flag = _DECODE_FLAGS[program]
        shape = shape_of(command)
        return not flag or flag in shape.flags or "--decode" in shape.flags
    if program == "openssl":
        return bool({"enc", "base64"} & set(command.args)) and "-d" in command.args
    return False


def _runs_fetched_code(analysis: CommandAnalysis) -> str | None:
    commands = analysis.commands
    for i, source in enumerate(commands):
        if not produces_code(source):
            continue
        for j, sink in enumerate(commands):
            fed = analysis.pipes_into(i, j) and _takes_code(sink)
            if fed or (source.parent == j and _runs_substitution(sink)):
                return (
                    f"`{source.text}` output is run by {sink.program or 'the shell'}: "
                    "downloaded or decoded code would run unchecked"
                )
    return None


def _takes_code(command: SimpleCommand) -> bool:
    return command.program in SHELLS or reads_code_from_stdin(command)


def _runs_substitution(command: SimpleCommand) -> bool:
    program = command.program
    return (
        is_interpreter(program)
        or program in {"eval", "source", "."}
        or 0 in command.dynamic
        or "eval" in command.wrappers
    )


_PER_COMMAND: tuple[Callable[[SimpleCommand], str | None], ...] = (
    _recursive_delete,
    _no_preserve_root,
    _disk_writes,
    _remote_shell,
)


def command_danger(command: SimpleCommand) -> str | None:
    """Why one simple command on its own must never run, or None."""
    for check in _PER_COMMAND:
        reason = check(command)
        if reason:
            return reason
    return None


def dangerous_reason(analysis: CommandAnalysis) -> str | None:
    """Why this command must never run, or None."""
    reason = _raw_text(analysis)
    if reason:
        return reason
    for command in analysis.commands:
        reason = command_danger(command)
        if reason:
            return reason
    return _deletes_after_cd(analysis) or _runs_fetched_code(analysis)
