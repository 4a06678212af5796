"""Gate mode, tried as an attacker would: commands generated from a grammar of bash
constructs (expansions, quoting, redirections, option spellings, joiners), and every
one the proof lets through run for real in bash on a scratch machine. Nothing allowed
may create, change or remove a file, nor print a secret or a canary's content.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.gate_scratch import Scratch, bash_available
from tools_app.core.gate import Fence, prove_command
from tools_app.core.policy.defaults import DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS

# Each slot is drawn mostly from what gate mode is meant to prove (so that many allowed
# commands run), else from the constructs and spellings attackers use.
PROGRAMS = (
    [
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "grep",
        "rg",
        "sort",
        "uniq",
        "cut",
        "diff",
        "du",
        "find",
        "echo",
        "pwd",
        "cd",
        "git status",
        "git diff",
        "git log",
        "git show",
    ],
    [
        "git grep",
        "test",
        "[",
        "printf",
        "touch",
        "cp",
        "tee",
        "sed",
        "awk",
        "xargs",
        "env",
        "bash -c",
        "sh",
        "eval",
        "man",
        "less",
        "file",
        "tar",
        "python3 -c",
        "git -c a=b log",
    ],
)
OPTIONS = (
    [
        "-l",
        "-la",
        "-n",
        "-n 3",
        "-n3",
        "-5",
        "-e foo",
        "--files",
        "-p",
        "--stat",
        "-c",
        "-v",
        "-name '*.py'",
        "--color=never",
        "-i",
        "-w",
        "-x",
        "--",
        "-",
        "-s",
        "-h",
    ],
    [
        "-r",
        "-R",
        "-o OUT",
        "-roOUT",
        "--output=OUT",
        "--outp=OUT",
        "--out OUT",
        "--col",
        "--compress-program=touch",
        "--open=touch",
        "--pre=touch",
        "--hidden",
        "-uu",
        "-g .env",
        "-exec touch CANARY",
        "-delete",
        "-fprint OUT",
        "--color=$(touch CANARY)",
        "-L",
        "--follow",
        "-z",
        "--ext-diff",
        "--output OUT",
        "-f .env",
        "--files0-from=.env",
    ],
)
OPERANDS = (
    [
        "README.md",
        "src/app.py",
        "src",
        ".",
        "foo",
        "'foo bar'",
        '"foo"',
        "HEAD",
        "HEAD~1",
        "'def foo'",
        "src/../README.md",
        "./src",
        "-- src",
        "OUT",
        "CANARY",
    ],
    [
        ".env",
        ".ENV",
        "config/.env.local",
        "aws_credentials.txt",
        "../canary/canary.txt",
        "../home/.ssh/id_rsa",
        "~/.ssh/id_rsa",
        "$HOME/.ssh/id_rsa",
        '"$HOME"',
        "a=~",
        "~",
        "'a[$(touch CANARY)]'",
        "a[$(touch CANARY)]",
        "$(touch CANARY)",
        "`touch CANARY`",
        '"$(touch CANARY)"',
        "<(touch CANARY)",
        "$((1+1))",
        "*",
        ".en?",
        "{a,b}",
        "\\$x",
        "HEAD:.env",
        ".git/config",
        ".GIT/HEAD",
        "/etc/hostname",
        "/proc/self/environ",
        "CANARY=1",
        "'it''s'",
        "../canary",
        "config",
        "../project/.env",
        "Config/.ENV.local",
    ],
)
REDIRECTS = (
    ["", "", "", "2>&1", ">/dev/null", "2>/dev/null", "< README.md", "1>&2", "&>/dev/null"],
    [
        "> OUT",
        ">> OUT",
        "< .env",
        "<<< x",
        ">& OUT",
        "&> OUT",
        "2> OUT",
        "> /dev/null 2>OUT",
        "<< EOF",
        "3>&1",
        ">&3",
        "2>&-",
        "0< ../canary/canary.txt",
        ">|OUT",
    ],
)
JOINERS = ([" && ", " || ", "; ", " | ", "\n"], [" & ", " |& ", ";; ", " ( ", " ) "])


def _pick(draw: st.DrawFn, choices: tuple[list[str], list[str]]) -> str:
    plausible, risky = choices
    return draw(st.sampled_from(risky if draw(st.integers(0, 9)) < 2 else plausible))


@st.composite
def commands(draw: st.DrawFn) -> str:
    parts = []
    for n in range(draw(st.integers(1, 2))):
        words = [_pick(draw, PROGRAMS)]
        words += [_pick(draw, OPTIONS) for _ in range(draw(st.integers(0, 1)))]
        words += [_pick(draw, OPERANDS) for _ in range(draw(st.integers(0, 3)))]
        words.append(_pick(draw, REDIRECTS))
        if n:
            parts.append(_pick(draw, JOINERS))
        parts.append(" ".join(w for w in words if w))
    return "".join(parts)


@pytest.fixture(scope="module")
def machine() -> Iterator[Scratch]:
    if not bash_available():
        pytest.skip("bash and git are needed to run what the proof allows")
    made = Scratch(Path(tempfile.mkdtemp(prefix="agentweb-gate-")) / "machine")
    yield made
    shutil.rmtree(made.root.parent, ignore_errors=True)


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(command=commands())
def test_nothing_the_proof_allows_harms_the_machine(machine: Scratch, command: str) -> None:
    fence = Fence(str(machine.project), DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS)
    proof = prove_command(command, str(machine.project), fence)
    if not proof.proven:
        assert proof.reason
        return
    output = machine.run(proof.narrowed or command, timeout=5)
    assert machine.harm(output) == [], (command, output)
