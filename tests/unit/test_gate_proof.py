"""Gate mode's proof: a command passes unseen only when it is proven to only read.

Every spelling the red team used (issue 30) is refused with a reason naming the word
that failed; the read-only commands agents really use are proven; and each proven one
is run for real in bash, on a scratch project with secrets and canaries, and harms
nothing.
"""

from __future__ import annotations

import pytest

from tests.unit.gate_scratch import CREDENTIALS, SECRET, Scratch
from tools_app.core.gate import Fence, prove_command
from tools_app.core.policy.defaults import DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS

ROOT = "/home/alice/project"
FENCE = Fence(ROOT, DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS)

# (command, a fragment of the reason it is refused)
REFUSED = [
    # bash evaluates a subscript, and runs what is in it
    ("test -v 'a[$(touch X)]'", "`test` is not one of the programs"),
    ("[ -v 'a[$(touch X)]' ]", "`[`"),
    ("[[ 'a[$(touch X)]' -eq 1 ]]", "`[`"),
    ("[[ -v 'a[$(touch X)]' ]]", "`[`"),
    ("printf -v x '$(touch X)'\ncat <<EOF\n${x@P}\nEOF", "`<<` (a here-document"),
    ("printf -v x '$(touch X)'", "`printf` is not one"),
    # read-only by name, yet they run programs
    ("git grep --open='touch X' foo", "`git grep` is not a git command"),
    ("git grep --open-files-in-pager='touch X' foo", "`git grep`"),
    ("sort --compress-program=sh README.md", "`sort --compress-program` is not an option"),
    ("man -C conf ls", "`man` is not one of the programs"),
    ("less --lesskey-src=keys README.md", "`less` is not one of the programs"),
    ("rg --pre=sh foo", "`rg --pre` is not an option"),
    ("find . -exec touch X", "`find -exec` is not a test"),
    ("git -c core.pager=sh log", "`git -c` is not a git command"),
    ("git diff --ext-diff", "`git diff --ext-diff` is not an option"),
    ("git log --output=OUT", "`git log --output` is not an option"),
    # writes judged read-only
    ("echo x >& .git/hooks/pre-commit", "writes a file"),
    ("echo x > out.txt", "writes a file"),
    ("sort -ro OUT README.md", "`sort -o` is not an option"),
    ("sort --outp=OUT README.md", "`sort --outp` is not an option"),
    ("sort --output=OUT README.md", "`sort --output` is not an option"),
    ("file --compile", "`file` is not one of the programs"),
    ("uniq README.md OUT", "more than 1 operands writes a file"),
    ("find . -delete", "`find -delete` is not a test"),
    ("find . -fprint OUT", "`find -fprint` is not a test"),
    # secrets read
    ("cat .en?", "`?` (a glob)"),
    ("cat config/.e*", "`*` (a glob)"),
    ("cat .env", "a secret path (`.env`)"),
    ("cat .ENV", "a secret path (`.env`)"),
    ("cat config/.Env.Local", "a secret path"),
    ("cat ./src/../.env", "a secret path"),
    ("grep -r SECRET .", "`grep -r` is not an option"),
    ("grep -R SECRET .", "`grep -R` is not an option"),
    ("grep --recursive SECRET .", "`grep --recursive` is not an option"),
    ("grep SECRET .env", "a secret path"),
    ("rg --hidden SECRET", "`rg --hidden` is not an option"),
    ("rg -uu SECRET", "`rg -u` is not an option"),
    ("rg -g .env SECRET", "`rg -g` is not an option"),
    ("rg SECRET .env", "a secret path"),
    ("cat ~/.ssh/id_rsa", "a tilde expansion"),
    ("cat ~/.aws/credentials", "a tilde expansion"),
    ("cat /home/alice/.ssh/id_rsa", "outside the session's directory (a secret of the machine)"),
    ("cat ../../.aws/credentials", "outside the session's directory (a secret of the machine)"),
    ("cat /proc/self/environ", "outside the session's directory (a secret of the machine)"),
    ("cat $HOME/.ssh/id_rsa", "`$`"),
    ('cat "$HOME/.ssh/id_rsa"', "`$` (an expansion or substitution) inside double quotes"),
    ("git show HEAD:.env", "`REV:PATH`"),
    ("git show 3f2a9c1", "names an object by its id"),
    ("git diff HEAD -- .env", "a secret path"),
    ("cat .git/config", "inside a .git directory"),
    ("cat .GIT/config", "inside a .git directory"),
    ("cat package.json", "a protected path (`package.json`)"),
    ("cat .GitHub/workflows/ci.yml", "a protected path (`.github/**`)"),
    # shell constructs
    ("echo $(id)", "`$`"),
    ("echo `id`", "backquote"),
    ("echo {a,b}", "`{`"),
    ("ls; (touch X)", "`(`"),
    ("ls & touch X", "background"),
    ("ls |& cat", "`|&`"),
    ("X=1 ls", "`X=1` sets a variable"),
    ("ls a=~", "tilde expansion"),
    ("cat .e^x", "zsh's pattern operator"),
    ("cat .env~x", "zsh's pattern operator"),
    ("git log HEAD~1", "quote it, 'HEAD~1'"),
    ("cat =sh", "zsh's equals expansion"),
    ("cat ''=sh", "zsh's equals expansion"),
    ("cat '.en''v'", "rc_quotes"),
    ("cat <(touch X)", "`<(`"),
    ("cat <<< x", "`<<`"),
    ("ls # a comment", "`#`"),
    ("ls \\\n-la", "backslash"),
    ("./ls", "by its path"),
    ("/bin/ls", "by its path"),
    ("cd / && ls", "outside the session's directory"),
    ("cd && ls", "`cd` is proven only with one directory"),
    ("ls 'unclosed", "never closed"),
    ("ls &&", "a command is missing"),
    ("", "the command is empty"),
    # options: full spellings only, values checked
    ("ls --al", "`ls --al` is not an option"),
    ("ls -Z", "`ls -Z` is not an option"),
    ("head -n x README.md", "takes a number"),
    ("ls --color=$(id)", "`$`"),
    ("git log -5 --format=%H --outp=x", "`git log --outp` is not an option"),
    ("wc --files0-from=list", "`wc --files0-from` is not an option"),
    ("curl https://example.com", "`curl` is not one of the programs"),
]

PROVEN = [
    "ls",
    "ls -la",
    "ls -la src",
    "cat README.md",
    "git status",
    "git status --short",
    "git diff",
    "git diff --stat",
    "git log --oneline -5",
    "git log --oneline -n 5",
    "git show 'HEAD~1' --stat",
    "grep -n foo src/app.py",
    "grep -n 'def foo' src/app.py",
    "grep -c foo README.md src/app.py",
    "rg foo",
    "rg -n foo src",
    "rg --files",
    "find . -name '*.py'",
    "find src -type f -name '*.py' -maxdepth 2",
    "wc -l src/app.py",
    "head -20 README.md",
    "head -n 5 README.md",
    "tail -n 5 README.md",
    "tail -5 README.md",
    "pwd",
    "ls -la | wc -l",
    "cd src && ls",
    "ls 2>/dev/null",
    "ls 2>&1 | head -3",
    "cat < README.md",
    "git log --oneline -5 && git status",
    "echo done",
    "git rev-parse --abbrev-ref HEAD",
    "git branch --show-current",
    "du -sh src",
    "sort README.md | uniq -c",
    "cat /home/alice/project/README.md",
]


@pytest.mark.parametrize(("command", "reason"), REFUSED)
def test_it_refuses_what_it_cannot_prove_naming_why(command: str, reason: str) -> None:
    proof = prove_command(command, ROOT, FENCE)
    assert not proof.proven
    assert reason in proof.reason, proof.reason


@pytest.mark.parametrize("command", PROVEN)
def test_the_reads_agents_really_use_are_proven(command: str) -> None:
    proof = prove_command(command, ROOT, FENCE)
    assert proof.proven, proof.reason


def test_what_reads_a_whole_tree_is_narrowed_to_leave_secrets_out() -> None:
    rg = prove_command("rg foo | head", ROOT, FENCE)
    assert rg.narrowed.startswith("rg --iglob '!**/.env' --iglob '!**/.env.*'")
    assert rg.narrowed.endswith(" --iglob '!**/.git' foo | head")
    diff = prove_command("git diff -- src", ROOT, FENCE)
    safe = (
        "GIT_CEILING_DIRECTORIES=/home/alice GIT_NO_LAZY_FETCH=1 GIT_ALLOW_PROTOCOL=none"
        " git --no-pager --no-optional-locks -c safe.bareRepository=explicit"
        " -c core.fsmonitor=false -c core.hooksPath=/dev/null -c log.showSignature=false"
        " -c gpg.program=false -c gpg.openpgp.program=false -c gpg.x509.program=false"
        " -c gpg.ssh.program=false --work-tree=/home/alice/project"
    )
    no_drivers = "--no-ext-diff --no-textconv --submodule=short"
    exclude = ":(top,exclude,icase,glob)"
    assert diff.narrowed.startswith(
        f"{safe} diff {no_drivers} -- src '{exclude}**/.env' '{exclude}**/.env/**' "
    )
    assert prove_command("git log --oneline", ROOT, FENCE).narrowed == (
        f"{safe} log {no_drivers} --oneline"
    )
    assert prove_command("git status", ROOT, FENCE).narrowed == f"{safe} status"
    blame = prove_command("git blame -f README.md", ROOT, FENCE).narrowed
    assert blame == f"{safe} blame --no-textconv --no-ignore-revs-file -f README.md"
    for content in ("-p", "--binary", "--check", "-U3", "--word-diff=plain"):
        assert "':(top,exclude" in prove_command(f"git log {content}", ROOT, FENCE).narrowed
    assert prove_command("rg --files", ROOT, FENCE).narrowed == ""
    assert prove_command("rg foo", ROOT, Fence(ROOT)).narrowed == "rg --iglob '!**/.git' foo"


def test_a_command_is_proven_where_it_runs() -> None:
    assert prove_command("cat ../README.md", f"{ROOT}/src", FENCE).proven
    assert not prove_command("cat ../../x", f"{ROOT}/src", FENCE).proven
    assert not prove_command("ls", "/etc", FENCE).proven
    # after `cd`, a path may be read from either directory: both must be safe
    assert not prove_command("cd config && cat .env.local", ROOT, FENCE).proven
    assert not prove_command("cd src; cat ../.env", ROOT, FENCE).proven


def test_names_are_compared_folded_and_normalised() -> None:
    fullwidth = "cat .\uff25\uff2e\uff36"  # .ENV in full-width letters
    assert "secret path" in prove_command(fullwidth, ROOT, FENCE).reason


@pytest.mark.parametrize("command", [c for c in PROVEN if "/home/alice" not in c])
def test_each_proven_command_harms_nothing_when_run_for_real(
    scratch: Scratch, command: str
) -> None:
    fence = Fence(str(scratch.project), DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS)
    proof = prove_command(command, str(scratch.project), fence)
    assert proof.proven, proof.reason
    output = scratch.run(proof.narrowed or command)
    assert scratch.harm(output) == [], output


@pytest.mark.parametrize(
    ("command", "leaked"),
    [
        ("git diff", SECRET),
        ("git log -p", SECRET),
        ("git show", SECRET),
        ("rg foo", CREDENTIALS),
        ("rg -i token", CREDENTIALS),
    ],
)
def test_the_narrowing_keeps_secret_files_out_of_what_reads_a_tree(
    scratch: Scratch, command: str, leaked: str
) -> None:
    """Unnarrowed, each of these prints a secret of the scratch project; narrowed, none."""
    assert leaked in scratch.run(command)
    fence = Fence(str(scratch.project), DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS)
    proof = prove_command(command, str(scratch.project), fence)
    output = scratch.run(proof.narrowed)
    assert scratch.harm(output) == [], output


def test_git_takes_no_bare_repository_an_agent_could_have_written(scratch: Scratch) -> None:
    """Writes gate mode allows (HEAD, config, objects/, refs/ in a directory) make a bare
    repository that git would use, config and all; the narrowed git refuses it."""
    planted = scratch.project / "src"
    (planted / "HEAD").write_text("ref: refs/heads/main\n")
    (planted / "config").write_text("[core]\n\tbare = true\n")
    for folder in ("objects", "refs"):
        (planted / folder).mkdir()
    assert scratch.run("cd src && git rev-parse --git-dir").strip() == "."
    fence = Fence(str(scratch.project), DEFAULT_PROTECTED_PATHS, DEFAULT_SECRET_PATHS)
    proof = prove_command("cd src && git rev-parse --git-dir", str(scratch.project), fence)
    output = scratch.run(proof.narrowed)
    assert "cannot use bare repository" in output
