"""Gate mode's reader against bash itself: for every command it accepts, the words it
reads are exactly the argv bash hands each program.

Each allowed program is shadowed by a bash function that writes its argv to fd 3, the
command text is run as it is, and the two lists are compared. Words come from a grammar
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
    if shutil.which("bash") is None:
        pytest.skip("bash is needed to compare with")
    made = Path(tempfile.mkdtemp(prefix="agentweb-words-"))
    (made / "README.md").write_text("x\n")
    yield made
    shutil.rmtree(made, ignore_errors=True)


def bash_argv(command: str, where: Path) -> Counter[tuple[str, ...]]:
    """The argv of every program call bash made running `command`."""
    records = Path(tempfile.mkdtemp(dir=where))
    script = f"{_SHADOW}exec 1>/dev/null 2>/dev/null\n{command}\n"
    subprocess.run(
        ["bash", "-c", script], cwd=where, capture_output=True, timeout=10, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(where), "LANG": "C.UTF-8",
             "RECORDS": str(records)},
    )  # fmt: skip
    calls = Counter(
        tuple(path.read_bytes().decode("utf-8", "surrogateescape").split("\0")[:-1])
        for path in records.iterdir()
    )
    shutil.rmtree(records)
    return calls


@settings(max_examples=500, deadline=None)
@given(command=scripts())
def test_every_word_it_reads_is_the_word_bash_passes(where: Path, command: str) -> None:
    try:
        script = read_script(command)
    except Unproven:
        return
    ran = bash_argv(command, where)
    read = Counter(tuple(simple.words) for simple in script.commands)
    if "&&" in command or "||" in command:  # bash may skip some: none it ran is unread
        assert ran <= read, (command, ran, read)
    else:
        assert ran == read, (command, ran, read)
