"""analyse_command finds every simple command a shell string would run."""

from __future__ import annotations

import json
import random

import pytest

from tools_app.core.policy.preview import parts_for_preview
from tools_app.core.shell.commands import analyse_command


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
    parts = parts_for_preview(analysis)
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


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("taskset 1 rm x", ["rm x"]),
        ("taskset -c 0,1 rm x", ["rm x"]),
        ("chrt 10 rm x", ["rm x"]),
        ("chrt -r 10 rm x", ["rm x"]),
        ("numactl -N 0 rm x", ["rm x"]),
        ("strace -f -o log rm x", ["rm x"]),
        ("chroot /srv/jail rm x", ["rm x"]),
        ("setsid -f rm x", ["rm x"]),
        ("flock -w 5 /tmp/lock rm x", ["rm x"]),
        ("rbash -c 'rm x'", ["rm x"]),
        ("tcsh -c 'rm x'", ["rm x"]),
        ("sg wheel -c 'rm x'", ["rm x"]),
        ("parallel -j 2 rm ::: a", ["rm ::: a"]),
        ("poetry run pytest -x", ["pytest -x"]),
        ("uv run --python 3.12 pytest", ["pytest"]),
        ("bundle exec rspec", ["rspec"]),
        ("{ls,-la}", ["ls -la"]),
    ],
)
def test_it_unwraps_the_wrappers_issue_12_found(command: str, expected: list[str]) -> None:
    assert texts(command) == expected


@pytest.mark.parametrize(
    "command", ["taskset -p 1234", "chrt -p 1234", "strace -p 1234", "uv run", "poetry run"]
)
def test_a_wrapper_that_runs_nothing_is_kept_as_is(command: str) -> None:
    assert texts(command) == [command]


def test_a_brace_expansion_in_command_position_is_expanded_and_named() -> None:
    analysis = analyse_command("{rm,-rf,build}")
    assert analysis.commands[0].argv == ("rm", "-rf", "build")
    assert any("brace expansion" in reason for reason in analysis.opaque)


def test_environment_set_by_a_wrapper_is_kept_with_the_command() -> None:
    (command,) = analyse_command("env GIT_DIR=x sudo FOO=1 git status").commands
    assert command.program == "git"
    assert command.assignments == ("GIT_DIR=x", "FOO=1")


def test_find_exec_of_a_shell_script_is_analysed_inside() -> None:
    analysis = analyse_command("find . -exec sh -c 'rm -rf x; ls' \\;")
    assert texts("find . -exec sh -c 'rm -rf x; ls' \\;")[1:] == ["rm -rf x", "ls"]
    assert analysis.commands[1].wrappers == ("find -exec", "sh -c")


def test_an_unknown_wrapper_is_checked_as_the_command_it_names() -> None:
    analysis = analyse_command("mywrapper --flag rm -rf build")
    assert [c.text for c in analysis.commands] == ["mywrapper --flag rm -rf build", "rm -rf build"]
    assert analysis.commands[1].wrappers == ("mywrapper?",)
    assert any("may run `rm`" in reason for reason in analysis.opaque)


@pytest.mark.parametrize("command", ["grep rm -r .", "echo rm -rf /", "man rm", "which git"])
def test_programs_whose_arguments_are_data_are_not_wrappers(command: str) -> None:
    assert texts(command) == [command]


def test_each_part_of_the_preview_says_why_it_needs_a_person() -> None:
    parts = parts_for_preview(
        analyse_command(
            "ls -la && npm ci && git -c core.pager=x clean -fdx && python3 -c 'x' && rm -rf $X"
        )
    )
    why = {part["text"]: part["why"] for part in parts}
    assert why["ls -la"] == []
    assert why["npm ci"][0] == "changes dependencies (npm ci)"
    assert "script-shell" in why["npm ci"][1]
    assert why["git -c core.pager=x clean -fdx"] == [
        "sets git configuration for this command (git -c), which can run programs",
        "deletes untracked files (git clean)",
    ]
    assert why["python3 -c x"] == ["runs python3 code given on the command line (-c), unchecked"]
    assert "path only known at run time" in why["rm -rf $X"][0]
    assert json.loads(json.dumps(parts)) == parts


def test_the_preview_says_why_a_nested_command_is_opaque() -> None:
    parts = parts_for_preview(analyse_command("find . -exec sh -c 'mv a b' \\;"))
    assert all(
        "find -exec runs a shell script on names only known at run time" in part["why"]
        for part in parts
    )


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat README.md | grep x | wc -l",
        "git status && git diff --stat && git log -3",
        "rg TODO > /dev/null 2>&1",
        "cd src && ls",
    ],
)
def test_known_read_only_commands_take_the_fast_path(command: str) -> None:
    assert analyse_command(command).reads_only


@pytest.mark.parametrize(
    "command",
    [
        "ls > out",
        "git push",
        "npm test",
        "cat $(x)",
        "rm x",
        "grep x | sh",
        "git commit -m x",
        "git reflog expire --all",
        "git diff --output=patch",
        "git -c core.pager=x log",
        "GIT_EXTERNAL_DIFF=x git diff",
        "sort -o out in",
        "rg --pre ./x foo",
        "find . -delete",
    ],
)
def test_anything_else_does_not_take_the_fast_path(command: str) -> None:
    assert not analyse_command(command).reads_only


def test_an_install_without_scripts_does_not_warn_about_them() -> None:
    (part,) = parts_for_preview(analyse_command("npm ci --ignore-scripts"))
    assert part["why"] == ["changes dependencies (npm ci)"]
