"""analyse_command finds every simple command a shell string would run."""

from __future__ import annotations

import json
import random

import pytest

from tools_app.policy import analyse_command


def texts(command: str) -> list[str]:
    return [c.text for c in analyse_command(command).commands]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("ls -la", ["ls -la"]),
        ("a | b | c", ["a", "b", "c"]),
        ("a && b || c; d", ["a", "b", "c", "d"]),
        ("a\nb\n\nc", ["a", "b", "c"]),
        ("(a; b)", ["a", "b"]),
        ("{ a; b; }", ["a", "b"]),
        ("a &", ["a"]),
        ("! a", ["a"]),
        ("for f in x y; do rm $f; done", ["rm $f"]),
        ("while true; do sleep 1; done", ["true", "sleep 1"]),
        ("until a; do b; done", ["a", "b"]),
        ("if a; then b; else c; fi", ["a", "b", "c"]),
        ("f() { rm x; }; f", ["rm x", "f"]),
        ("ls; # a comment", ["ls"]),
    ],
)
def test_it_finds_every_simple_command(command: str, expected: list[str]) -> None:
    assert texts(command) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("bash -c 'a; b'", ["a", "b"]),
        ("sh -c 'rm -rf x'", ["rm -rf x"]),
        ("zsh -c 'x'", ["x"]),
        ("dash -c 'x'", ["x"]),
        ("bash -lc 'npm install'", ["npm install"]),
        ("bash -ec 'x && y'", ["x", "y"]),
        ("bash -o pipefail -c 'x | y'", ["x", "y"]),
        ("bash --login -c 'x'", ["x"]),
        ("sh -c \"sh -c 'rm -rf /'\"", ["rm -rf /"]),
        ("env rm x", ["rm x"]),
        ("env -i FOO=1 -u BAR rm x", ["rm x"]),
        ("/usr/bin/env FOO=bar rm x", ["rm x"]),
        ("env -S 'rm -rf x'", ["rm -rf x"]),
        ("sudo rm x", ["rm x"]),
        ("sudo -u root -E rm x", ["rm x"]),
        ("sudo --user=root rm x", ["rm x"]),
        ("doas -u root rm x", ["rm x"]),
        ("timeout 5 rm x", ["rm x"]),
        ("timeout -s KILL -k 2 5s rm x", ["rm x"]),
        ("timeout --signal=TERM 10 rm x", ["rm x"]),
        ("nice -n 10 rm x", ["rm x"]),
        ("nice -10 rm x", ["rm x"]),
        ("nohup rm x", ["rm x"]),
        ("command rm x", ["rm x"]),
        ("exec rm x", ["rm x"]),
        ("time rm x", ["rm x"]),
        ("time -p rm x", ["rm x"]),
        ("/usr/bin/time -f %e rm x", ["rm x"]),
        ("xargs rm", ["rm"]),
        ("xargs -0 -n 1 rm -f", ["rm -f"]),
        ("stdbuf -oL rm x", ["rm x"]),
        ("stdbuf -o L rm x", ["rm x"]),
        ("ionice -c 3 rm x", ["rm x"]),
        ("busybox sh -c 'rm x'", ["rm x"]),
        ("watch -n 5 'ls; ps'", ["ls", "ps"]),
        ("sudo timeout 5 nice -n 1 env A=1 /bin/rm x", ["rm x"]),
        ("FOO=1 BAR=2 rm x", ["rm x"]),
        ("/bin/rm x", ["rm x"]),
        ("./node_modules/.bin/jest", ["jest"]),
        ('r"m" x', ["rm x"]),
        ("'rm' x", ["rm x"]),
        ("\\rm x", ["rm x"]),
        ("xargs sh -c 'rm x'", ["rm x"]),
        ("eval 'rm x'", ["rm x"]),
    ],
)
def test_it_unwraps_wrappers_and_shell_strings(command: str, expected: list[str]) -> None:
    assert texts(command) == expected


def test_it_keeps_the_wrappers_it_peeled_off() -> None:
    (command,) = analyse_command("sudo timeout 5 bash -c 'rm x'").commands
    assert command.wrappers == ("sudo", "timeout", "bash -c")
    assert command.program == "rm"


def test_it_exposes_the_basename_as_program_and_the_full_argv() -> None:
    (command,) = analyse_command("/bin/rm -rf build").commands
    assert command.argv == ("/bin/rm", "-rf", "build")
    assert command.program == "rm"
    assert command.args == ("-rf", "build")


def test_command_v_does_not_run_its_argument() -> None:
    assert texts("command -v rm") == ["command -v rm"]


def test_plain_shell_with_a_script_file_is_kept_as_is() -> None:
    assert texts("bash scripts/test.sh") == ["bash scripts/test.sh"]


def test_it_finds_commands_that_find_exec_runs() -> None:
    analysis = analyse_command("find . -name '*.pyc' -exec rm -f {} \\;")
    assert [c.text for c in analysis.commands] == [
        "find . -name *.pyc -exec rm -f {} ;",
        "rm -f {}",
    ]
    assert analysis.commands[1].wrappers == ("find -exec",)


def test_it_records_pipelines_by_stage() -> None:
    analysis = analyse_command("a | b && c | (d; e)")
    assert analysis.pipelines == ((0, 1), (2, 3, 4))
    assert analysis.pipes_into(0, 1)
    assert analysis.pipes_into(2, 4)
    assert not analysis.pipes_into(1, 0)
    assert not analysis.pipes_into(3, 4)
    assert not analysis.pipes_into(1, 2)


def test_later_stages_count_as_piped_into() -> None:
    analysis = analyse_command("curl x | tee log | sh")
    assert analysis.pipes_into(0, 2)


@pytest.mark.parametrize(
    ("command", "op", "target"),
    [
        ("echo x > out", ">", "out"),
        ("echo x >> out", ">>", "out"),
        ("ls &> out", "&>", "out"),
        ("ls &>> out", "&>>", "out"),
        ("ls >| out", ">|", "out"),
        ("ls 2> err", ">", "err"),
        ("cat < in", "<", "in"),
    ],
)
def test_it_records_redirections(command: str, op: str, target: str) -> None:
    (redirect,) = analyse_command(command).commands[0].redirects
    assert (redirect.op, redirect.target) == (op, target)


def test_redirections_of_a_group_apply_to_every_command_in_it() -> None:
    analysis = analyse_command("{ a; b; } > out")
    assert [[r.target for r in c.redirects] for c in analysis.commands] == [["out"], ["out"]]


def test_redirections_of_a_shell_string_apply_to_its_commands() -> None:
    analysis = analyse_command("bash -c 'a' > .env")
    assert analysis.commands[0].redirects[0].target == ".env"


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("echo $(date)", "command substitution $(...)"),
        ("echo `date`", "backticks"),
        ("diff <(ls a) <(ls b)", "process substitution <(...)"),
        ("tee >(cat)", "process substitution >(...)"),
        ("eval $CMD", "eval"),
        ("source env.sh", "source"),
        (". env.sh", "`.`"),
        ("case x in a) ls;; esac", "cannot be parsed"),
        ("arr=(1 2); echo $arr", "cannot be parsed"),
        ("$CMD -rf /", "only known at run time"),
        ("x=rm; $x y", "only known at run time"),
        ("$'\\x72m' -rf x", "$'...'"),
        ('bash -c "$SCRIPT"', "built at run time"),
        ("echo hi | bash", "pipes text into bash"),
        ("cat x | python3", "pipes text into python3"),
        ("bash <<EOF\nls\nEOF", "standard input"),
        ("python <<< 'import os'", "standard input"),
        ("cat <<EOF\n$(whoami)\nEOF", "here-document"),
        ('cat <<< "$X"', "here-string"),
        ("trap 'rm x' EXIT", "trap"),
        ("alias ls='rm -rf'", "alias"),
        ("find . | xargs rm", "xargs"),
        ("parallel rm ::: a b", "GNU parallel"),
    ],
)
def test_it_reports_what_it_cannot_check(command: str, fragment: str) -> None:
    opaque = analyse_command(command).opaque
    assert any(fragment in reason for reason in opaque), opaque


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "echo $HOME",
        "pytest -k 'a and b'",
        "cat x | python3 -m json.tool",
        "cat x | python tools/summarise.py",
        "cat > f <<'EOF'\n$(not run)\nEOF",
        "cat > f <<EOF\nplain $HOME\nEOF",
        "[[ -f x ]] && echo yes",
        "command -v git",
        "",
    ],
)
def test_it_does_not_flag_ordinary_commands(command: str) -> None:
    assert analyse_command(command).opaque == ()


def test_it_still_analyses_the_commands_inside_a_substitution() -> None:
    analysis = analyse_command("echo $(rm -rf x)")
    assert [c.text for c in analysis.commands] == ["echo $(rm -rf x)", "rm -rf x"]
    assert analysis.commands[1].parent == 0


def test_it_analyses_a_here_document_fed_to_a_shell() -> None:
    assert "rm -rf /" in texts("bash <<EOF\nrm -rf /\nEOF")


def test_parts_for_preview_are_json() -> None:
    analysis = analyse_command("sudo npm install x > log")
    parts = analysis.parts_for_preview()
    assert json.loads(json.dumps(parts)) == parts
    assert parts[0]["program"] == "npm"
    assert parts[0]["wrappers"] == ["sudo"]
    assert parts[0]["redirects"] == [{"op": ">", "target": "log"}]


def test_deep_nesting_is_opaque_not_a_crash() -> None:
    command = "ls"
    for _ in range(12):
        command = "bash -c " + json.dumps(command)
    assert analyse_command(command).opaque


def test_it_never_raises_on_random_input() -> None:
    rng = random.Random(20240601)
    alphabet = "ab rm-f/|&;()<>{}$`'\"\\\n*~=!#[]0x"
    for _ in range(400):
        command = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        analysis = analyse_command(command)
        assert analysis.text == command
