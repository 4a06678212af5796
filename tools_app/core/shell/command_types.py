"""The plain records of a parsed command: one program run and its redirections.

They live apart from commands.py (which builds them by walking bashlex's tree) so that
programs.py, which judges a command by what its program does, and commands.py, which
uses that judgement while walking, can both import them without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools_app.core.shell.wrappers import program_name


@dataclass(frozen=True)
class Redirect:
    """One redirection: `op` as bash spells it (`>`, `>>`, `&>`, `<`, `<<<` …)."""

    op: str
    target: str
    fd: int | None = None

    @property
    def writes(self) -> bool:
        return self.op in {">", ">>", "&>", "&>>", ">|", "<>"}


@dataclass(frozen=True)
class SimpleCommand:
    """One program run: its argv after wrappers are peeled off, and what surrounds it.

    `parent` is the index of the command in whose arguments this one was found as a
    command or process substitution (`bash <(curl x)`: curl's parent is bash).
    `dynamic` holds the argv positions whose value is only known at run time.
    `notes` are the reasons this command cannot be fully checked (also in the
    analysis' `opaque`), kept here so that a reviewer sees which part they belong to.
    """

    argv: tuple[str, ...]
    redirects: tuple[Redirect, ...] = ()
    assignments: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()
    source: str = ""
    parent: int | None = None
    dynamic: frozenset[int] = frozenset()
    notes: tuple[str, ...] = ()

    @property
    def program(self) -> str:
        return program_name(self.argv[0]) if self.argv else ""

    @property
    def args(self) -> tuple[str, ...]:
        return self.argv[1:]

    @property
    def text(self) -> str:
        """The command as rules see it: program name and arguments, space separated."""
        return " ".join((self.program, *self.args)) if self.argv else ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "argv": list(self.argv),
            "text": self.text,
            "wrappers": list(self.wrappers),
            "assignments": list(self.assignments),
            "redirects": [{"op": r.op, "target": r.target} for r in self.redirects],
        }
