"""Gate mode's reader against the shells themselves: for every command it accepts, the
words it reads are exactly the argv bash hands each program, and zsh too (the shell of
Claude Code on a Mac) with extended globbing and rc_quotes, at its most eager.

Each allowed program is shadowed by a shell function that writes its argv to a file of
its own, the command text is run as it is, and the calls are compared. Words come from a grammar
of quoting (single, double, mixed, adjacent), characters that are literal only in some
places (`~`, `^`, `=`, `#`), non-ASCII letters, blanks and newlines inside quotes, and
redirections between the words.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools_app.core.gate.programs import PROGRAMS
from tools_app.core.gate.words import Unproven, read_script

NAMES = sorted({*PROGRAMS, "git", "cd", "find"})
# Each call writes its argv to a file of its own (a pipeline's commands run at once).
_SHADOW = "".join(
    f'{name}() {{ printf \'%s\\0\' {name} "$@" > "$(mktemp -p "$RECORDS")"; }}\n' for name in NAMES
)
PIECES = [
    "a",
    "README.md",
    "-n",
    "--color=never",
    "x=1",
    "HEAD~1",
    "a^b",
    "~",
    "a~b",
    "=x",
    "'q w'",
    "'$(id)'",
    '"d q"',
    '"a b\'c"',
    "'a\nb'",
    '"x\ny"',
    "''",
    '""',
    "é",
    "日本",
    "a#b",
    "#c",
    "'#'",
    "2",
    "-",
    "--",
    "%s",
    "@x",
    "a,b",
    ":x",
    "x:~",
    "'~'",
    '"~"',
    "\\x",
    "$x",
    "a'b'c",
    "\"a\"'b'",
    "*",
    "[",
    "{a,b}",
    "!",
    "&",
    "(",
    "<(x)",
    "a\tb",
]
JOINERS = [" ", " && ", " || ", " ; ", " | ", "\n", "  "]
REDIRECTS = ["", "", " 2>/dev/null", " >/dev/null", " 2>&1", " <README.md", " 1>&2"]


@st.composite
def scripts(draw: st.DrawFn) -> str:
    parts = []
    for n in range(draw(st.integers(1, 3))):
        words = [draw(st.sampled_from(NAMES))]
        for _ in range(draw(st.integers(0, 4))):
            glued = draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=3))
            words.append("".join(glued))
        if n:
            parts.append(draw(st.sampled_from(JOINERS[1:])))
        parts.append(" ".join(words) + draw(st.sampled_from(REDIRECTS)))
    return "".join(parts)


@pytest.fixture(scope="module")
def where() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="agentweb-words-"))
    (made / "README.md").write_text("x\n")
    yield made
    shutil.rmtree(made, ignore_errors=True)


SHELLS = {"bash": "", "zsh": "setopt extendedglob rcquotes\n"}


def shell_argv(shell: str, command: str, where: Path) -> Counter[tuple[str, ...]]:
    """The argv of every program call `shell` made running `command`."""
    records = Path(tempfile.mkdtemp(dir=where))
    script = f"{SHELLS[shell]}{_SHADOW}exec 1>/dev/null 2>/dev/null\n{command}\n"
    subprocess.run(
        [shell, "-c", script], cwd=where, capture_output=True, timeout=10, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(where), "LANG": "C.UTF-8",
             "RECORDS": str(records)},
    )  # fmt: skip
    calls = Counter(
        tuple(path.read_bytes().decode("utf-8", "surrogateescape").split("\0")[:-1])
        for path in records.iterdir()
    )
    shutil.rmtree(records)
    return calls


@pytest.mark.parametrize("shell", sorted(SHELLS))
@settings(max_examples=300, deadline=None)
@given(command=scripts())
def test_every_word_it_reads_is_the_word_the_shell_passes(
    where: Path, shell: str, command: str
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (make test installs it)")
    try:
        script = read_script(command)
    except Unproven:
        return
    ran = shell_argv(shell, command, where)
    read = Counter(tuple(simple.words) for simple in script.commands)
    if "&&" in command or "||" in command:  # bash may skip some: none it ran is unread
        assert ran <= read, (command, ran, read)
    else:
        assert ran == read, (command, ran, read)
