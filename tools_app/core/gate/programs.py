"""The programs gate mode lets run unseen, each with the options it may take.

An allow-list, short on purpose: a program is here only when every listed option only
reads (and reads nothing but the files named), and an option not listed — a spelling
GNU would accept as an abbreviation, an option that writes a file, runs a program,
recurses into directories or follows links — leaves the command to a person. Options
are matched by their full spelling; short ones may be bundled (`-la`) and take their
value attached (`-n5`) or as the next word (`-n 5`); long ones take it after `=` or as
the next word. Pure data, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["GIT_SUBCOMMANDS", "PROGRAMS", "Kind", "Program"]

# What a word is to the program: a flag takes nothing; `num` a count; `word` a short
# keyword; `text` data it never opens nor runs; `regex` a pattern for a backtracking
# matcher (text, but no backreference: `(.*)(.*)\2\1` may never end); `format` git's
# pretty format,
# text but for `%G` (a signature check runs gpg); `path` a file or directory it reads,
# checked against the session's directory and the policy.
Kind = Literal["flag", "num", "word", "text", "regex", "format", "path"]
Operands = Literal["paths", "text", "pattern_then_paths", "revisions_or_paths", "none"]


@dataclass(frozen=True)
class Program:
    """One program's grammar: its options and what its operands are."""

    short: dict[str, Kind] = field(default_factory=dict)
    long: dict[str, Kind] = field(default_factory=dict)
    # Long options whose value is optional and only given after `=` (`--color[=WHEN]`):
    # the next word is never theirs.
    optional: dict[str, Kind] = field(default_factory=dict)
    # Short options whose value is optional and only given attached (git's `-U5`).
    attached: dict[str, Kind] = field(default_factory=dict)
    operands: Operands = "paths"  # GNU getopt: options may also follow operands
    max_operands: int | None = None
    numeric_option: bool = False  # `head -20`: the old spelling of `-n 20`
    takes_options: bool = True  # False: every word is an operand (echo, true)
    # The program reads every file below a directory operand (or the current one).
    recursive: bool = False


def _flags(*names: str) -> dict[str, Kind]:
    return dict.fromkeys(names, "flag")


def _valued(**kinds: Kind) -> dict[str, Kind]:
    """Long options with a value, named without their dashes (`max_depth` for
    `--max-depth`)."""
    return {"--" + name.replace("_", "-"): kind for name, kind in kinds.items()}


_LS = Program(
    short=_flags(*"aAlhR1trSdFpisnGgoxCmUvXcuBQN"),
    long=_flags("--all", "--almost-all", "--human-readable", "--recursive", "--reverse")
    | _flags("--directory", "--classify", "--size", "--inode", "--numeric-uid-gid")
    | _flags("--group-directories-first", "--ignore-backups", "--quote-name", "--literal")
    | _valued(sort="word", time_style="text", width="num"),
    optional={"--color": "word"},
)
_CAT = Program(
    short=_flags(*"nbsAETve"),
    long=_flags("--number", "--number-nonblank", "--squeeze-blank", "--show-all")
    | _flags("--show-ends", "--show-tabs", "--show-nonprinting"),
)
_HEAD_TAIL = Program(
    short={"n": "num", "c": "num", "q": "flag", "v": "flag"},
    long=_valued(lines="num", bytes="num") | _flags("--quiet", "--silent", "--verbose"),
    numeric_option=True,
)
_WC = Program(
    short=_flags(*"lwcmL"),
    long=_flags("--lines", "--words", "--bytes", "--chars", "--max-line-length"),
)
_GREP = Program(
    short=_flags(*"nivwxclLoqshHEFGIabTZz")
    | {"e": "regex", "A": "num", "B": "num", "C": "num", "m": "num"},
    long=_flags("--line-number", "--ignore-case", "--invert-match", "--word-regexp")
    | _flags("--line-regexp", "--count", "--files-with-matches", "--files-without-match")
    | _flags("--only-matching", "--quiet", "--silent", "--no-messages", "--no-filename")
    | _flags("--with-filename", "--extended-regexp", "--fixed-strings", "--basic-regexp")
    | _flags("--byte-offset", "--initial-tab", "--null", "--null-data", "--no-ignore-case")
    | {"--regexp": "regex", "--after-context": "num", "--before-context": "num"}
    | {"--context": "num", "--max-count": "num", "--label": "text"},
    optional={"--color": "word", "--colour": "word"},
    operands="pattern_then_paths",
)
_RG = Program(
    short=_flags(*"niSswFlcvxoNHIqUb0")
    | {"e": "text", "A": "num", "B": "num", "C": "num", "m": "num", "t": "word"}
    | {"T": "word", "M": "num", "d": "num", "r": "text"},
    long=_flags("--line-number", "--ignore-case", "--smart-case", "--case-sensitive")
    | _flags("--word-regexp", "--fixed-strings", "--files-with-matches", "--count")
    | _flags("--invert-match", "--line-regexp", "--only-matching", "--no-line-number")
    | _flags("--with-filename", "--no-filename", "--no-heading", "--heading", "--quiet")
    | _flags("--multiline", "--byte-offset", "--null", "--column", "--vimgrep", "--json")
    | _flags("--stats", "--trim", "--files", "--count-matches", "--sort-files", "--pretty")
    | _flags("--files-without-match", "--passthru", "--no-messages", "--crlf")
    | {"--regexp": "text", "--after-context": "num", "--before-context": "num"}
    | {"--context": "num", "--max-count": "num", "--type": "word", "--type-not": "word"}
    | {"--max-columns": "num", "--max-depth": "num", "--sort": "word", "--sortr": "word"}
    | {"--replace": "text", "--color": "word", "--colors": "text", "--max-filesize": "word"},
    operands="pattern_then_paths",
    recursive=True,
)
FIND_PRIMARIES: dict[str, Kind] = {
    "-name": "text",
    "-iname": "text",
    "-path": "text",
    "-ipath": "text",
    "-wholename": "text",
    "-iwholename": "text",
    "-regex": "regex",
    "-iregex": "regex",
    "-type": "word",
    "-maxdepth": "num",
    "-mindepth": "num",
    "-size": "word",
    "-mtime": "word",
    "-mmin": "word",
    "-ctime": "word",
    "-cmin": "word",
    "-atime": "word",
    "-amin": "word",
    "-perm": "word",
    "-user": "word",
    "-group": "word",
    "-links": "word",
    "-newer": "path",
}
FIND_FLAGS = frozenset(
    {"-print", "-print0", "-empty", "-not", "-a", "-o", "-and", "-or", "-prune", "-quit"}
    | {"-true", "-false", "-readable", "-writable", "-executable", "-xdev", "-mount"}
    | {"-depth", "-nouser", "-nogroup", "-daystart", "-noleaf", "-ls"}
)
_SORT = Program(
    short=_flags(*"nrufhbdiMRVsgc") | {"k": "text", "t": "text"},
    long=_flags("--numeric-sort", "--reverse", "--unique", "--ignore-case")
    | _flags("--human-numeric-sort", "--version-sort", "--stable", "--general-numeric-sort")
    | _flags("--ignore-leading-blanks", "--dictionary-order", "--month-sort", "--check")
    | {"--key": "text", "--field-separator": "text"},
)
_UNIQ = Program(
    short=_flags(*"cduiz") | {"f": "num", "s": "num", "w": "num"},
    long=_flags("--count", "--repeated", "--unique", "--ignore-case", "--zero-terminated")
    | {"--skip-fields": "num", "--skip-chars": "num", "--check-chars": "num"},
    max_operands=1,  # a second operand is the file uniq writes
)
_CUT = Program(
    short={"d": "text", "f": "text", "c": "text", "b": "text", "s": "flag", "z": "flag"},
    long=_valued(delimiter="text", fields="text", characters="text", bytes="text")
    | _valued(output_delimiter="text")
    | _flags("--only-delimited", "--complement", "--zero-terminated"),
)
_DU = Program(
    short=_flags(*"shacbkmx0") | {"d": "num"},
    long=_flags("--summarize", "--human-readable", "--all", "--total", "--bytes")
    | _flags("--apparent-size", "--one-file-system", "--null", "--si")
    | _valued(max_depth="num"),
)

# Not `diff`: given two directories it compares the files they share, and with -N it
# prints whole every file found in one of them only.
PROGRAMS: dict[str, Program] = {
    "ls": _LS,
    "cat": _CAT,
    "head": _HEAD_TAIL,
    "tail": _HEAD_TAIL,
    "wc": _WC,
    "pwd": Program(short=_flags("L", "P"), operands="none"),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _RG,
    "sort": _SORT,
    "uniq": _UNIQ,
    "cut": _CUT,
    "du": _DU,
    "basename": Program(short={"s": "text", "a": "flag", "z": "flag"}, operands="text"),
    "dirname": Program(short=_flags("z"), operands="text"),
    "echo": Program(operands="text", takes_options=False),  # its options only format
    "true": Program(operands="text", takes_options=False),
    "false": Program(operands="text", takes_options=False),
}

# git: global options before the subcommand, then each subcommand's own grammar.
# Operands of diff, show and log are revisions or paths; a `REV:PATH` or a bare object
# id (which may name a blob) is refused by the proof, and their output is narrowed to
# leave out the policy's secret files (`:(exclude)` pathspecs).
GIT_GLOBAL: dict[str, Kind] = {"--no-pager": "flag", "-P": "flag"}
_DIFF_FORMAT = _flags("--stat", "--numstat", "--shortstat", "--name-only", "--name-status")
_DIFF_FORMAT |= _flags("--summary", "--no-color", "--minimal", "--patience", "--histogram")
_DIFF_FORMAT |= _flags("--ignore-all-space", "--ignore-space-change", "--check", "--raw")
_DIFF_FORMAT |= _flags("--no-renames", "--patch", "--no-patch", "--full-index", "--binary")
_DIFF_FORMAT |= {"--diff-filter": "word"}
_DIFF_SHORT: dict[str, Kind] = _flags("p", "w", "b", "s", "M", "R")
# git takes these values only attached (`--unified=3`, `-U3`, `--pretty=oneline`): given
# as the next word, that word is an operand, so a proof reading it as the value would
# let a revision or path (`--output=FILE` even) through unchecked.
_DIFF_OPTIONAL: dict[str, Kind] = {"--unified": "num", "--word-diff": "word", "--color": "word"}
_DIFF_ATTACHED: dict[str, Kind] = {"U": "num"}
_PRETTY: dict[str, Kind] = {"--format": "format", "--pretty": "format", "--decorate": "word"}
GIT_SUBCOMMANDS: dict[str, Program] = {
    "status": Program(  # not -v: it prints the staged diff, unnarrowed
        short=_flags("s", "b", "z"),
        long=_flags("--short", "--branch", "--long", "--ignored", "--show-stash")
        | _flags("--ahead-behind", "--no-ahead-behind", "--renames", "--no-renames"),
        optional={"--porcelain": "word", "--untracked-files": "word", "--column": "word"},
    ),
    "diff": Program(
        short=_DIFF_SHORT,
        long=_DIFF_FORMAT | _flags("--cached", "--staged", "--merge-base", "--exit-code"),
        optional=_DIFF_OPTIONAL | {"--dirstat": "word", "--find-renames": "word"},
        attached=_DIFF_ATTACHED,
        operands="revisions_or_paths",
    ),
    "show": Program(
        short=_DIFF_SHORT,
        long=_DIFF_FORMAT
        | _flags("--oneline", "--abbrev-commit", "--no-abbrev-commit")
        | {"--date": "word"},
        optional=_DIFF_OPTIONAL | _PRETTY,
        attached=_DIFF_ATTACHED,
        operands="revisions_or_paths",
    ),
    "log": Program(
        short=_DIFF_SHORT | {"n": "num", "i": "flag"},
        long=_DIFF_FORMAT
        | _flags("--oneline", "--graph", "--all", "--reverse", "--first-parent", "--merges")
        | _flags("--no-merges", "--abbrev-commit", "--follow", "--date-order", "--topo-order")
        | _flags("--branches", "--tags", "--remotes", "--left-right", "--cherry-pick")
        | {"--max-count": "num", "--skip": "num", "--since": "text", "--until": "text"}
        | {"--after": "text", "--before": "text", "--author": "regex", "--committer": "regex"}
        | {"--grep": "regex", "--date": "word"},
        optional=_DIFF_OPTIONAL | _PRETTY,
        attached=_DIFF_ATTACHED,
        operands="revisions_or_paths",
        numeric_option=True,
    ),
    "branch": Program(
        short=_flags("a", "r", "v", "l"),
        long=_flags("--all", "--remotes", "--verbose", "--list", "--show-current")
        | {"--sort": "word", "--contains": "text", "--merged": "text", "--no-merged": "text"},
        optional={"--color": "word", "--column": "word"},
        operands="none",
    ),
    "rev-parse": Program(
        long=_flags("--show-toplevel", "--git-dir", "--is-inside-work-tree", "--verify")
        | _flags("--show-prefix", "--show-cdup", "--symbolic-full-name")
        | {"--abbrev-ref": "flag", "--short": "flag"},
        operands="text",
    ),
    "ls-files": Program(
        short=_flags("c", "m", "o", "d", "s", "u", "t", "z"),
        long=_flags("--cached", "--modified", "--others", "--deleted", "--stage")
        | _flags("--unmerged", "--exclude-standard", "--full-name", "--directory"),
    ),
    "blame": Program(
        short=_flags("s", "w", "e", "c", "l", "t", "f", "n") | {"L": "text"},
        long=_flags("--show-email", "--show-name", "--show-number", "--porcelain")
        | _flags("--line-porcelain", "--root", "--show-stats"),
        operands="revisions_or_paths",
    ),
}
# Subcommands whose output holds file contents: narrowed to leave out secret files.
GIT_SHOWS_CONTENT = frozenset({"diff", "show"})
# `git log` options that never print a file's content; any other (`-p`, `--binary`,
# `--check`, `-U` …) has its output narrowed like `git diff`'s.
GIT_LOG_NAMES_ONLY = frozenset(
    {"--oneline", "--graph", "--all", "--reverse", "--first-parent", "--merges", "-n"}
    | {"--no-merges", "--abbrev-commit", "--follow", "--date-order", "--topo-order", "-i"}
    | {"--branches", "--tags", "--remotes", "--left-right", "--cherry-pick", "--skip"}
    | {"--max-count", "--since", "--until", "--after", "--before", "--author", "--grep"}
    | {"--committer", "--format", "--pretty", "--date", "--color", "--decorate", "--stat"}
    | {"--numstat", "--shortstat", "--name-only", "--name-status", "--summary", "-s"}
    | {"--no-color", "--raw", "--no-renames", "--full-index", "--no-patch", "-M", "-R"}
)
# Options that give grep or rg its pattern, so that every operand is a path.
PATTERN_OPTIONS = frozenset({"-e", "--regexp", "--files"})
