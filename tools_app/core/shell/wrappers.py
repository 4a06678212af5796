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

SHELLS = frozenset(
    {"sh", "bash", "rbash", "zsh", "dash", "ksh", "rksh", "mksh", "ash", "yash", "fish"}
    | {"csh", "tcsh", "posh", "oksh", "loksh"}
)
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
    "taskset": WrapperSpec(leading_positionals=1, no_command_flags="p"),
    "chrt": WrapperSpec(short_with_value="TPD", leading_positionals=1, no_command_flags="pm"),
    "numactl": WrapperSpec(short_with_value="CNmpiP", no_command_flags="Hs"),
    "chroot": WrapperSpec(leading_positionals=1),
    "prlimit": WrapperSpec(no_command_flags="p"),
    "strace": WrapperSpec(short_with_value="abeEIoOpPsSUuX", no_command_flags="p"),
    "ltrace": WrapperSpec(short_with_value="aeEfLlnopsuwxX", no_command_flags="p"),
    "faketime": WrapperSpec(short_with_value="p", leading_positionals=1),
    "fakeroot": WrapperSpec(short_with_value="is", long_with_value=frozenset({"--lib"})),
    "torsocks": WrapperSpec(short_with_value="uapP"),
    "proxychains": WrapperSpec(short_with_value="f"),
    "proxychains4": WrapperSpec(short_with_value="f"),
    "xvfb-run": WrapperSpec(short_with_value="nlsefp"),
    "dbus-run-session": WrapperSpec(),
    "dbus-launch": WrapperSpec(),
    "catchsegv": WrapperSpec(),
    "valgrind": WrapperSpec(),
    "firejail": WrapperSpec(),
    "cgexec": WrapperSpec(short_with_value="g"),
    "pkexec": WrapperSpec(long_with_value=frozenset({"--user"})),
    "trickle": WrapperSpec(short_with_value="udwtln"),
    "rlwrap": WrapperSpec(short_with_value="abcCDefFgHiIlmMnNoOpPqrRsStTwWz"),
    "nsenter": WrapperSpec(short_with_value="tSGwd"),
    "unshare": WrapperSpec(short_with_value="S", long_with_value=frozenset({"--setuid"})),
    "sg": WrapperSpec(leading_positionals=1),
    "parallel": WrapperSpec(
        short_with_value="jSadInNLCPE",
        long_with_value=frozenset(
            {"--jobs", "--arg-file", "--delimiter", "--sshlogin", "--joblog", "--results"}
            | {"--tmpdir", "--colsep", "--timeout", "--retries", "--halt", "--delay"}
        ),
    ),
}

# `poetry run CMD`: tools that run a command in a project's environment.
RUNNERS: dict[str, tuple[str, WrapperSpec]] = {
    "poetry": ("run", WrapperSpec()),
    "pipenv": ("run", WrapperSpec()),
    "pdm": ("run", WrapperSpec()),
    "rye": ("run", WrapperSpec()),
    "hatch": ("run", WrapperSpec()),
    "bundle": ("exec", WrapperSpec()),
    "uv": (
        "run",
        WrapperSpec(
            short_with_value="p",
            long_with_value=frozenset(
                {"--with", "--with-editable", "--with-requirements", "--python", "--package"}
                | {"--extra", "--group", "--env-file", "--directory", "--project", "--index"}
            ),
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
    assignments: tuple[str, ...] = ()


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
    if name in RUNNERS:
        return _runner(argv, i)
    spec = WRAPPERS.get(name)
    if spec is None:
        return None
    end = _option_end(argv, i + 1, spec)
    if end is None:
        return None
    end += spec.leading_positionals
    if end >= len(argv):
        return None
    assignments = tuple(a for a in argv[i + 1 : end] if spec.assignments and _ASSIGNMENT.match(a))
    return Unwrapped(end, (name,), assignments=assignments)


def _runner(argv: Sequence[str], i: int) -> Unwrapped | None:
    """`uv run --with x pytest` runs pytest; the label keeps `--with`, an install."""
    name = program_name(argv[i])
    subcommand, spec = RUNNERS[name]
    if i + 1 >= len(argv) or argv[i + 1] != subcommand:
        return None
    end = _option_end(argv, i + 2, spec)
    if end is None or end >= len(argv):
        return None
    label = f"{name} {subcommand}"
    if any(a.startswith("--with") for a in argv[i + 2 : end]):
        label += " --with"
    return Unwrapped(end, (label,))


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


_DASH_C = frozenset({"su", "script", "flock", "runuser", "sg"})


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
    assignments: list[str] = []
    for _ in range(32):
        if start >= len(argv):
            break
        step = _unwrap_one(argv, start)
        if step is None:
            break
        wrappers.extend(step.wrappers)
        assignments.extend(step.assignments)
        if step.script is not None:
            return Unwrapped(
                step.start, tuple(wrappers), step.script, step.script_words, tuple(assignments)
            )
        start = step.start
    return Unwrapped(start, tuple(wrappers), assignments=tuple(assignments))


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


# --- code that cannot be seen into ------------------------------------------------------

_INLINE_CODE_FLAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"c"}),
    "pypy": frozenset({"c"}),
    "node": frozenset({"e", "p", "--eval", "--print"}),
    "nodejs": frozenset({"e", "p", "--eval", "--print"}),
    "bun": frozenset({"e", "p", "--eval", "--print"}),
    "deno": frozenset({"eval"}),
    "perl": frozenset({"e", "E"}),
    "ruby": frozenset({"e"}),
    "php": frozenset({"r", "--run"}),
    "lua": frozenset({"e"}),
    "luajit": frozenset({"e"}),
    "osascript": frozenset({"e"}),
    "pwsh": frozenset({"c", "-Command", "-command", "--command"}),
    "powershell": frozenset({"c", "-Command", "-command"}),
    "tclsh": frozenset(),
    "expect": frozenset({"c"}),
    "R": frozenset({"e"}),
    "Rscript": frozenset({"e"}),
    "julia": frozenset({"e", "E", "--eval"}),
}
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})
_SEDS = frozenset({"sed", "gsed"})


def interpreter_base(program: str) -> str:
    """`python3.12` → `python`, `node18` → `node`."""
    return re.sub(r"[\d.]+$", "", program) or program


def inline_code_flag(argv: Sequence[str]) -> str | None:
    """The option that hands an interpreter code on the command line (`python -c`)."""
    flags = _INLINE_CODE_FLAGS.get(interpreter_base(program_name(argv[0])))
    if not flags:
        return None
    for arg in argv[1:]:
        if arg == "--" or not arg.startswith("-"):
            if arg in flags:  # `deno eval CODE`
                return arg
            if arg != "--":
                return None
            continue
        if arg in flags or arg.split("=", 1)[0] in flags:
            return arg
        if not arg.startswith("--") and set(arg[1:]) & flags:
            return arg
    return None


def awk_program(argv: Sequence[str]) -> str | None:
    """The program text of an awk command line, or None (a file given with -f)."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg in {"-f", "--file"}:
            return None
        if arg in {"-e", "--source"} and i + 1 < len(argv):
            return argv[i + 1]
        if arg == "--":
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg in {"-F", "-v", "-W"}:
            i += 2
        elif arg.startswith("-") and len(arg) > 1:
            i += 1
        else:
            return arg
    return None


_AWK_RUNS = re.compile(r"\bsystem\s*\(|\|")


def awk_runs_commands(argv: Sequence[str]) -> bool:
    """`awk '{system(…)}'` and `print | "sh"` / `"cmd" | getline` run shell commands."""
    if program_name(argv[0]) not in _AWKS:
        return False
    program = awk_program(argv)
    return program is not None and bool(_AWK_RUNS.search(program))


def sed_scripts(argv: Sequence[str]) -> list[str]:
    """The scripts of a sed command line: `-e` values, or the first word."""
    scripts: list[str] = []
    i = 1
    first: str | None = None
    while i < len(argv):
        arg = argv[i]
        if arg in {"-e", "--expression"} and i + 1 < len(argv):
            scripts.append(argv[i + 1])
            i += 2
            continue
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg.startswith("-e") and len(arg) > 2:
            scripts.append(arg[2:])
        elif arg in {"-f", "--file", "-l", "--line-length"}:
            i += 1
        elif not arg.startswith("-") and first is None:
            first = arg
        i += 1
    return scripts or ([first] if first is not None else [])


_SED_ADDRESS = re.compile(
    r"\s*(?:\d+|\$|/(?:[^/\\\n]|\\.)*/[IM]*)?(?:\s*[,~]\s*(?:\d+|\$|/(?:[^/\\\n]|\\.)*/))?\s*!?\s*"
)


def sed_runs_commands(argv: Sequence[str]) -> bool:
    """GNU sed's `e` command and the `e` flag of `s///` run a shell command."""
    if program_name(argv[0]) not in _SEDS:
        return False
    return any(_sed_script_runs(script) for script in sed_scripts(argv))


def _sed_script_runs(script: str) -> bool:
    i = 0
    while i < len(script):
        match = _SED_ADDRESS.match(script, i)
        i = match.end() if match else i
        if i >= len(script):
            return False
        command = script[i]
        if command == "e":
            return True
        if command in "sy" and i + 1 < len(script):
            i, flags = _s_flags(script, i + 1)
            if command == "s" and "e" in flags:
                return True
            i += 1
        else:
            i = _next_command(script, i)
    return False


def _s_flags(script: str, i: int) -> tuple[int, str]:
    """Skip `s/a/b/` starting at its delimiter; return where flags end, and the flags."""
    delimiter = script[i]
    seen = 0
    i += 1
    while i < len(script) and seen < 2:
        if script[i] == "\\":
            i += 2
            continue
        seen += script[i] == delimiter
        i += 1
    start = i
    while i < len(script) and script[i] not in ";\n}":
        if script[i] == "w":  # a file name runs to the end of the line
            return len(script) if "\n" not in script[i:] else script.index("\n", i), script[start:i]
        i += 1
    return i, script[start:i]


def _next_command(script: str, i: int) -> int:
    if script[i] in "{}":
        return i + 1
    for end in range(i, len(script)):
        if script[end] in ";\n}" and script[i] not in "aic:rRwWbtT":
            return end + 1 if script[end] != "}" else end
        if script[end] == "\n":
            return end + 1
    return len(script)
