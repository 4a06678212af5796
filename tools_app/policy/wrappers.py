"""Programs that run another program: which one they really run.

`sudo -u deploy timeout 5 /usr/bin/env FOO=1 rm -rf /` runs `rm`. Checks must look at
`rm`, so wrappers are peeled off before any check sees a command, and commands that
take a shell script as a string (`bash -c`, `eval`, `watch`) hand that string back to
be analysed like the original one.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class WrapperSpec:
    """How a wrapper's own options look, so that its command can be found after them."""

    short_with_value: str = ""
    long_with_value: frozenset[str] = frozenset()
    leading_positionals: int = 0
    assignments: bool = False
    no_command_flags: str = ""


WRAPPERS: dict[str, WrapperSpec] = {
    "sudo": WrapperSpec(
        short_with_value="ughpCDrtTUc",
        long_with_value=frozenset(
            {"--user", "--group", "--host", "--prompt", "--chdir", "--role", "--type"}
        ),
        assignments=True,
        no_command_flags="lvkK",
    ),
    "doas": WrapperSpec(short_with_value="uC"),
    "env": WrapperSpec(
        short_with_value="uCP",
        long_with_value=frozenset({"--unset", "--chdir"}),
        assignments=True,
    ),
    "timeout": WrapperSpec(
        short_with_value="sk",
        long_with_value=frozenset({"--signal", "--kill-after"}),
        leading_positionals=1,
    ),
    "nice": WrapperSpec(short_with_value="n", long_with_value=frozenset({"--adjustment"})),
    "nohup": WrapperSpec(),
    "setsid": WrapperSpec(),
    "unbuffer": WrapperSpec(),
    "builtin": WrapperSpec(),
    "command": WrapperSpec(no_command_flags="vV"),
    "exec": WrapperSpec(short_with_value="a"),
    "time": WrapperSpec(short_with_value="fo", long_with_value=frozenset({"--format", "--output"})),
    "stdbuf": WrapperSpec(
        short_with_value="ioe", long_with_value=frozenset({"--input", "--output", "--error"})
    ),
    "ionice": WrapperSpec(short_with_value="cnp", no_command_flags="p"),
    "chronic": WrapperSpec(),
    "busybox": WrapperSpec(),
    "flock": WrapperSpec(short_with_value="wE", leading_positionals=1),
    "systemd-run": WrapperSpec(short_with_value="uHMEp"),
    "runuser": WrapperSpec(short_with_value="ugGsw"),
    "xargs": WrapperSpec(
        short_with_value="ILnPsdEa",
        long_with_value=frozenset(
            {"--max-args", "--max-procs", "--max-lines", "--delimiter", "--arg-file"}
        ),
    ),
}


_WATCH = WrapperSpec(short_with_value="nq", long_with_value=frozenset({"--interval"}))


@dataclass(frozen=True)
class Unwrapped:
    """Where the real command starts in argv, and the wrappers in front of it.

    `script` is set when the real command is a shell script held in argv words
    (`bash -c SCRIPT`, `eval A B`, `su -c SCRIPT`): the caller analyses it instead of
    argv[start:]. `script_words` are the argv positions it came from.
    """

    start: int
    wrappers: tuple[str, ...] = ()
    script: str | None = None
    script_words: tuple[int, ...] = ()


def _script(start: int, wrapper: str, argv: Sequence[str], words: Sequence[int]) -> Unwrapped:
    text = " ".join(argv[i] for i in words)
    return Unwrapped(start, (wrapper,), text, tuple(words))


def program_name(word: str) -> str:
    """`/usr/bin/rm` and `./rm` are both `rm` for every check."""
    return posixpath.basename(word.rstrip("/")) if word.rstrip("/") else word


def _option_end(argv: Sequence[str], i: int, spec: WrapperSpec) -> int | None:
    """Index of the first argument after the wrapper's options; None when it runs nothing."""
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return i + 1
        if spec.assignments and _ASSIGNMENT.match(arg):
            i += 1
        elif arg.startswith("--"):
            name = arg.split("=", 1)[0]
            i += 2 if name in spec.long_with_value and "=" not in arg else 1
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            if any(letter in spec.no_command_flags for letter in letters):
                return None
            i += 1 + _short_value_follows(letters, spec.short_with_value)
        else:
            return i
    return i


def _short_value_follows(letters: str, with_value: str) -> int:
    """1 when a short option cluster like `-u` takes the next word as its value."""
    for pos, letter in enumerate(letters):
        if letter in with_value:
            return 1 if pos == len(letters) - 1 else 0
    return 0


def _unwrap_one(argv: Sequence[str], i: int) -> Unwrapped | None:
    """Peel one wrapper at argv[i], or None when argv[i] is not one."""
    name = program_name(argv[i])
    if name in SHELLS:
        return _shell_script(argv, i)
    if name == "eval":
        return _script(i, name, argv, range(i + 1, len(argv)))
    if name == "watch":
        end = _option_end(argv, i + 1, _WATCH)
        return _script(i, name, argv, range(end or len(argv), len(argv)))
    if name in _DASH_C:
        found = _dash_c(argv, i)
        if found is not None or name in {"su", "script"}:
            return found
    if name == "env":
        split = _env_split_string(argv, i)
        if split is not None:
            return split
    spec = WRAPPERS.get(name)
    if spec is None:
        return None
    end = _option_end(argv, i + 1, spec)
    if end is None:
        return None
    end += spec.leading_positionals
    if end >= len(argv):
        return None
    return Unwrapped(end, (name,))


def _env_split_string(argv: Sequence[str], i: int) -> Unwrapped | None:
    """`env -S 'rm -rf /'` splits its string into a command: analyse it as a script."""
    for j in range(i + 1, len(argv)):
        arg = argv[j]
        if arg in {"-S", "--split-string"} and j + 1 < len(argv):
            return _script(i, "env -S", argv, range(j + 1, len(argv)))
        for prefix in ("--split-string=", "-S"):
            if arg.startswith(prefix) and len(arg) > len(prefix):
                rest = _script(i, "env -S", argv, range(j + 1, len(argv)))
                script = f"{arg[len(prefix) :]} {rest.script}".strip()
                return Unwrapped(i, rest.wrappers, script, (j, *rest.script_words))
        if not arg.startswith("-") and not _ASSIGNMENT.match(arg):
            return None
    return None


_DASH_C = frozenset({"su", "script", "flock", "runuser"})


def _dash_c(argv: Sequence[str], i: int) -> Unwrapped | None:
    """`su -c CMD`, `script -c CMD`, `flock FILE -c CMD`: CMD is a shell script."""
    name = program_name(argv[i])
    for j in range(i + 1, len(argv) - 1):
        arg = argv[j]
        if arg == "--command" or (arg[:1] == "-" and arg[1:2] != "-" and arg.endswith("c")):
            return _script(i, f"{name} -c", argv, (j + 1,))
    for j in range(i + 1, len(argv)):
        if argv[j].startswith("--command="):
            script = argv[j].split("=", 1)[1]
            return Unwrapped(i, (f"{name} -c",), script, (j,))
    return None


def _shell_script(argv: Sequence[str], i: int) -> Unwrapped | None:
    """`bash -lc SCRIPT`: the script word; plain `bash file.sh` is not unwrapped."""
    j = i + 1
    runs_string = False
    while j < len(argv):
        arg = argv[j]
        if arg in {"--", "-"}:
            j += 1
            break
        if arg.startswith("--"):
            j += 2 if arg in {"--rcfile", "--init-file"} else 1
        elif arg[:1] in {"-", "+"} and len(arg) > 1:
            runs_string = runs_string or "c" in arg[1:]
            j += 2 if arg[-1] in "oO" else 1
        else:
            break
    if runs_string and j < len(argv):
        return _script(i, f"{program_name(argv[i])} -c", argv, (j,))
    return None


def unwrap(argv: Sequence[str]) -> Unwrapped:
    """Follow wrappers until the program that really runs (at most 32 deep)."""
    start = 0
    wrappers: list[str] = []
    for _ in range(32):
        if start >= len(argv):
            break
        step = _unwrap_one(argv, start)
        if step is None:
            break
        wrappers.extend(step.wrappers)
        if step.script is not None:
            return Unwrapped(step.start, tuple(wrappers), step.script, step.script_words)
        start = step.start
    return Unwrapped(start, tuple(wrappers))


def find_exec_commands(argv: Sequence[str]) -> list[tuple[str, ...]]:
    """The commands `find ... -exec CMD {} ;` would run, so that they are checked too."""
    found: list[tuple[str, ...]] = []
    i = 0
    while i < len(argv):
        if argv[i] in {"-exec", "-execdir", "-ok", "-okdir"}:
            j = i + 1
            while j < len(argv) and argv[j] not in {";", "+"}:
                j += 1
            if j > i + 1:
                found.append(tuple(argv[i + 1 : j]))
            i = j
        i += 1
    return found
