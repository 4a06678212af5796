"""Hostile arguments for every registered tool: a ToolError that says why, never a crash.

Arbitrary JSON-like values (lone surrogates, NUL, integers beyond 64 bits, NaN and
infinity, nesting deeper than any recursion limit, strings past every bound, wrong
types) go into `validate_args` and `engine.prepare` for each tool in the registry.
"""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools_app.core import engine
from tools_app.core.policy.defaults import DEFAULT_POLICY
from tools_app.core.policy.loader import policy_from_dict
from tools_app.core.policy.types import SessionCounters
from tools_app.core.tools import jsonsafe
from tools_app.core.tools.base import MAX_COMMAND_CHARS, MAX_PATH_CHARS, MAX_TEXT_CHARS, ToolArgs
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.registry import REGISTRY, get_tool, validate_args

# Example counts come from the Hypothesis profile (tests/conftest.py): `make fuzz` runs many.
EXAMPLES = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOOLS = sorted(REGISTRY)
POLICY = policy_from_dict(DEFAULT_POLICY)


def nested(depth: int) -> list[Any]:
    """A list `depth` levels deep, built without recursion."""
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_TEXT = [
    "\ud800",
    "\udcff.txt",
    "ok\ud83dx",
    "a\x00b",
    "\x00",
    "",
    " ",
    "../../etc/passwd",
    "/etc/passwd",
    "~/.ssh/id_rsa",
    ".git/config",
    "-rf",
    "--upload-pack=touch /tmp/pwned",
    "HEAD",
    "@{-1}",
    "main\n",
    "http://127.0.0.1:1/",
    "file:///etc/passwd",
    "é" * 300,
    "x" * (MAX_PATH_CHARS + 1),
    "y" * (MAX_COMMAND_CHARS + 1),
]
PLAUSIBLE_TEXT = ["README.md", "src", ".", "*.py", "ls -la", "main", "feature/x", "GET", "fix"]

# Every code point, surrogates included (hypothesis leaves them out by default).
any_text = st.text(st.characters(exclude_categories=()), max_size=20)
text = st.one_of(any_text, st.sampled_from(HOSTILE_TEXT), st.sampled_from(PLAUSIBLE_TEXT))
numbers = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 1, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, text)
json_like = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(text, children, max_size=4)
    ),
    max_leaves=12,
)
values = st.one_of(json_like, st.integers(33, 3000).map(nested))


def args_for(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    """Dicts built from the tool's own argument names, hostile values and a stray key."""
    fields = list(REGISTRY[tool].args_model.model_fields)
    known = (
        st.dictionaries(st.sampled_from(fields), values, max_size=len(fields))
        if fields
        else st.just({})
    )
    stray = st.dictionaries(text, values, max_size=1)
    return st.tuples(known, stray, st.booleans()).map(
        lambda parts: {**parts[0], **parts[1]} if parts[2] else parts[0]
    )


def assert_printable(message: str) -> None:
    """A message that any terminal, file or database can take."""
    message.encode("utf-8")
    assert "\x00" not in message


def assert_validates_or_explains(tool: str, args: object) -> None:
    try:
        parsed = validate_args(tool, args)
    except ToolError as error:
        assert_printable(str(error))
        assert str(error).startswith(("Invalid arguments", "Arguments for"))
        return
    assert isinstance(parsed, ToolArgs)
    assert jsonsafe.problem(parsed.model_dump()) is None


@pytest.mark.parametrize("tool", TOOLS)
@EXAMPLES
@given(args=st.dictionaries(text, values, max_size=5))
def test_any_json_object_validates_or_is_explained(tool: str, args: dict[str, Any]) -> None:
    assert_validates_or_explains(tool, args)


@pytest.mark.parametrize("tool", TOOLS)
@EXAMPLES
@given(data=st.data())
def test_hostile_values_for_known_arguments_validate_or_are_explained(
    tool: str, data: st.DataObject
) -> None:
    assert_validates_or_explains(tool, data.draw(args_for(tool)))


@pytest.mark.parametrize("tool", TOOLS)
@settings(deadline=None)
@given(args=values)
def test_arguments_that_are_not_an_object_are_explained(tool: str, args: object) -> None:
    assert_validates_or_explains(tool, args)


# --- the cases issue 11 names, one by one ------------------------------------------------


def refusal(tool: str, args: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as caught:
        validate_args(tool, args)
    assert_printable(str(caught.value))
    return str(caught.value)


def test_a_lone_surrogate_in_a_path_is_named_with_its_escape() -> None:
    message = refusal("write_file", {"path": "\ud800x", "content": "x"})
    assert "`path` contains a lone surrogate (\\ud800) at character 0" in message
    assert "send valid Unicode text" in message


def test_a_nul_in_file_content_is_refused() -> None:
    message = refusal("write_file", {"path": "a.txt", "content": "one\x00two"})
    assert "`content` contains a NUL byte (\\u0000) at character 3" in message


def test_a_nul_inside_a_list_names_the_item() -> None:
    message = refusal("git_commit", {"message": "m", "files": ["a.py", "b\x00.py"]})
    assert "`files[1]` contains a NUL byte" in message


def test_a_surrogate_in_a_header_value_names_the_header() -> None:
    message = refusal("web_fetch", {"url": "https://example.com/", "headers": {"X-A": "\udfff"}})
    assert "`headers.X-A` contains a lone surrogate (\\udfff)" in message


def test_a_surrogate_in_an_argument_name_is_refused_by_name() -> None:
    message = refusal("read_file", {"path": "a", "\ud800": 1})
    assert "the argument name `\\ud800` contains a lone surrogate" in message


def test_an_integer_beyond_64_bits_is_refused() -> None:
    message = refusal("read_file", {"path": "a", "offset": 2**64})
    assert "`offset` is a number too large; integers must fit in 64 bits" in message


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_timeout_that_is_not_finite_is_refused(number: float) -> None:
    message = refusal("run_command", {"command": "ls", "timeout": number})
    assert "`timeout` is" in message and "send a finite number" in message


def test_ten_thousand_nested_lists_are_refused_without_recursing() -> None:
    message = refusal("git_commit", {"message": "m", "files": nested(10_000)})
    assert "is nested too deeply (more than 32 levels)" in message


def test_a_deep_stray_argument_is_refused_without_recursing() -> None:
    message = refusal("git_status", {"extra": nested(10_000)})
    assert "unexpected argument `extra`" in message


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        (
            "read_file",
            {"path": "p" * (MAX_PATH_CHARS + 1)},
            "`path` is too long: 4,097 characters, at most 4,096",
        ),
        (
            "run_command",
            {"command": "c" * (MAX_COMMAND_CHARS + 1)},
            "`command` is too long: 100,001 characters, at most 100,000",
        ),
        (
            "write_file",
            {"path": "a", "content": "c" * (MAX_TEXT_CHARS + 1)},
            "`content` is too long: 5,000,001 characters, at most 5,000,000",
        ),
        (
            "git_branch",
            {"action": "create", "name": "b" * 256},
            "`name` is too long: 256 characters, at most 255",
        ),
    ],
)
def test_a_string_past_its_bound_is_refused_with_the_bound(
    tool: str, args: dict[str, Any], expected: str
) -> None:
    assert expected in refusal(tool, args)


def test_a_too_long_file_in_a_list_is_named_by_index() -> None:
    message = refusal("git_commit", {"message": "m", "files": ["a", "f" * 5000]})
    assert "`files[1]` is too long: 5,000 characters, at most 4,096" in message


def test_each_bound_is_in_the_schema_a_model_reads() -> None:
    schema = REGISTRY["write_file"].json_schema()["properties"]
    assert schema["path"]["maxLength"] == MAX_PATH_CHARS
    assert schema["content"]["maxLength"] == MAX_TEXT_CHARS


def test_a_wrong_type_is_named() -> None:
    assert "`path` must be a string (got 5)" in refusal("read_file", {"path": 5})


# --- the engine's first step, on a real workspace -----------------------------------------


@pytest.fixture(scope="module")
def git_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Title\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    identity = ["-c", "user.email=t@example.com", "-c", "user.name=T"]
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *identity, *command], cwd=root, check=True, capture_output=True)
    return root


@pytest.mark.parametrize("tool", TOOLS)
@settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_prepare_never_raises_on_hostile_arguments(
    tool: str, data: st.DataObject, git_workspace: Path
) -> None:
    args = data.draw(args_for(tool))
    prepared = engine.prepare(POLICY, get_tool(tool), args, git_workspace, SessionCounters())
    assert isinstance(prepared, engine.Prepared)
    assert prepared.status in {"failed", "denied", "awaiting_approval", "approved"}
    assert_printable(prepared.error)
    if prepared.status != "failed":
        assert jsonsafe.problem(prepared.args) is None
    json.dumps(jsonsafe.storable_json(prepared.args))


# --- storable_json: what the receive path stores before validation -----------------------


def stores_anywhere(value: object) -> None:
    """What SQLite, PostgreSQL's jsonb and a UTF-8 terminal all take."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    text.encode("utf-8")
    assert "\x00" not in text


@settings(deadline=None)
@given(value=values)
def test_storable_json_makes_any_value_storable(value: object) -> None:
    stores_anywhere(jsonsafe.storable_json(value))


@settings(deadline=None)
@given(value=values)
def test_storable_json_leaves_valid_input_as_it_is(value: object) -> None:
    if jsonsafe.problem(value) is None:
        assert jsonsafe.storable_json(value) == value


def test_storable_json_replaces_surrogates_and_shows_nul() -> None:
    assert jsonsafe.storable_json({"path": "\ud800x", "c": "a\x00b"}) == {
        "path": "\ufffdx",
        "c": "a\\u0000b",
    }


def test_storable_json_turns_huge_and_non_finite_numbers_into_text() -> None:
    stored = jsonsafe.storable_json([2**64, 10**5000, math.nan, -math.inf, 2**63 - 1])
    assert stored[0] == str(2**64)
    assert "integer of about 5000 digits" in stored[1]
    assert stored[2:] == ["nan", "-inf", 2**63 - 1]


def test_storable_json_cuts_deep_nesting_with_a_marker() -> None:
    stored = jsonsafe.storable_json({"deep": nested(10_000)})
    text = json.dumps(stored)
    assert "nested deeper than 32 levels: left out" in text


def test_storable_json_caps_the_size_with_a_marker() -> None:
    big = ["x" * 10_000_000, "y" * 10_000_000]
    stored = jsonsafe.storable_json(big)
    assert stored[0] == big[0]
    assert stored[1].endswith("characters left out]")
    assert len(stored[1]) < 6_100_000


def test_storable_json_makes_keys_and_odd_objects_text() -> None:
    assert jsonsafe.storable_json({1: (b"\x00",), "\udcff": None}) == {
        "1": ["b'\\x00'"],
        "\ufffd": None,
    }


# --- loads: strict JSON for the command line and the API -----------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"path": "\\ud800x"}', "ARGS: `path` contains a lone surrogate (\\ud800) at character 0"),
        ('{"a": ["\\u0000"]}', "ARGS: `a[0]` contains a NUL byte"),
        ('{"\\udc80": 1}', "ARGS: a key in the value (\\udc80) contains a lone surrogate"),
        ('{"n": 1e400}', "ARGS: the number 1e400 is too large"),
        ('{"n": NaN}', "NaN is not valid JSON"),
        ('{"n": -Infinity}', "-Infinity is not valid JSON"),
        ('{"n": ' + "9" * 5000 + "}", "is too large; integers must fit in 64 bits"),
        ("[" * 10_000 + "]" * 10_000, "ARGS is nested too deeply (more than 32 levels)"),
        (
            "[" * 33 + "]" * 33,
            "ARGS: `" + "[0]" * 25 + "[0...` is nested too deeply (more than 32 levels)",
        ),
        ('{"a": ', "ARGS is not valid JSON: Expecting value"),
        (b"\xff{}", "ARGS is not valid UTF-8 (invalid start byte at byte 0)"),
    ],
)
def test_loads_refuses_what_cannot_be_stored_and_says_where(
    text: str | bytes, expected: str
) -> None:
    with pytest.raises(jsonsafe.UnsafeJSON) as caught:
        jsonsafe.loads(text, name="ARGS")
    assert expected in str(caught.value)
    assert_printable(str(caught.value))


def test_loads_takes_ordinary_json_and_surrogate_pairs() -> None:
    value = jsonsafe.loads(
        '{"a": [1, -2.5, true, null, "\\ud83d\\ude00"], "n": -9223372036854775808}'
    )
    assert value == {"a": [1, -2.5, True, None, "\U0001f600"], "n": -(2**63)}
