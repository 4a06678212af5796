"""JSON that every store and every file can take: checks for input, repair for storage.

A JSON text may legally carry things that break later steps: a lone surrogate
(`"\\ud800"`) cannot be encoded as UTF-8, so writing it to a file, a terminal or
PostgreSQL fails; PostgreSQL cannot store NUL in text or jsonb; `NaN` and `1e400`
(infinity) are not JSON at all once dumped again; an integer of 5,000 digits cannot
be printed by Python; 10,000 nested lists exhaust the recursion limit of every
recursive walker. Input is refused with `problem()`/`loads()`, naming where and what;
anything that must be stored whatever it holds goes through `storable_json()`.
Pure: no Django, no I/O.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_INT",
    "UnsafeJSON",
    "loads",
    "printable",
    "problem",
    "storable_args",
    "storable_json",
    "storable_text",
    "text_issue",
    "text_problem",
]

# Deeper than any tool argument, policy or API body needs; far below the recursion limit.
MAX_DEPTH = 32
# A signed 64-bit integer: what databases, JavaScript clients and git options all take.
MAX_INT = 2**63 - 1
# What storable_json keeps of one value's strings and items before it cuts with a marker;
# above the API's 10 MB body limit, so valid input is stored unchanged.
MAX_STORED_CHARS = 16_000_000
REPLACEMENT = "\ufffd"

_SURROGATE = re.compile("[\ud800-\udfff]")


class UnsafeJSON(ValueError):
    """JSON input that cannot be taken as it is; the message says where and why."""


def printable(text: str) -> str:
    """`text` with lone surrogates and NUL shown as escapes, safe to print and store."""
    escaped = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return escaped.replace("\x00", "\\x00")


def text_problem(text: str, where: str) -> str | None:
    """Why `text` cannot be taken (a lone surrogate, a NUL), or None."""
    issue = text_issue(text)
    return f"{_label(where)} {issue}" if issue else None


def text_issue(text: str) -> str | None:
    found = _SURROGATE.search(text)
    if found:
        char = printable(found.group())
        return (
            f"contains a lone surrogate ({char}) at character {found.start()}; "
            "send valid Unicode text"
        )
    nul = text.find("\x00")
    if nul >= 0:
        return (
            f"contains a NUL byte (\\u0000) at character {nul}; "
            "remove it (text here cannot hold NUL)"
        )
    return None


def problem(value: object, *, where: str = "", max_depth: int = MAX_DEPTH) -> str | None:
    """The first part of a parsed JSON value that cannot be taken, said plainly, or None.

    Walks iteratively, so a value nested far deeper than the recursion limit is
    reported, not crashed on.
    """
    stack: list[tuple[object, str, int]] = [(value, where, 0)]
    while stack:
        item, at, depth = stack.pop()
        found = _scalar_problem(item, at)
        if found:
            return found
        if isinstance(item, (list, tuple, dict)) and depth >= max_depth:
            return f"{_label(at)} is nested too deeply (more than {max_depth} levels)"
        if isinstance(item, (list, tuple)):
            stack.extend((child, f"{at}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, dict):
            for key, child in item.items():
                issue = text_issue(key) if isinstance(key, str) else None
                if issue:
                    return f"a key in {_label(at)} ({printable(str(key))}) {issue}"
                stack.append((child, _child(at, key), depth + 1))
    return None


def loads(text: str | bytes, *, name: str = "the JSON", max_depth: int = MAX_DEPTH) -> Any:
    """Parse JSON strictly (no NaN or Infinity, numbers that fit 64 bits), then `problem()`.

    `name` is what the document is called where it came from (ARGS_JSON, a file name,
    the request body); messages start with it and name the part inside by its path.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            where = f"{exc.reason} at byte {exc.start}"
            raise UnsafeJSON(f"{name} is not valid UTF-8 ({where})") from None
    try:
        value = json.loads(
            text, parse_int=_checked_int, parse_float=_checked_float, parse_constant=_no_constant
        )
    except json.JSONDecodeError as exc:
        raise UnsafeJSON(f"{name} is not valid JSON: {exc}") from None
    except UnsafeJSON as exc:  # from a number hook, which cannot know where it is
        raise UnsafeJSON(f"{name}: {exc}") from None
    except RecursionError:
        raise UnsafeJSON(f"{name} is nested too deeply (more than {max_depth} levels)") from None
    found = problem(value, max_depth=max_depth)
    if found:
        raise UnsafeJSON(f"{name}: {found}")
    return value


def storable_json(value: object) -> Any:
    """`value` as JSON that SQLite, PostgreSQL's jsonb and `json.dumps` all take.

    Lone surrogates become U+FFFD, NUL becomes the text `\\u0000`, non-finite floats and
    integers beyond 64 bits become strings, anything deeper than MAX_DEPTH or past
    MAX_STORED_CHARS becomes a marker string, and other Python objects their repr.
    Valid input (what `problem()` accepts, under the size cap) comes back equal.
    """
    budget = [MAX_STORED_CHARS]
    return _storable(value, 0, budget)


def storable_args(args: object) -> dict[str, Any]:
    """A call's arguments as received, in a form every database stores (a lone surrogate
    or a NUL would make PostgreSQL refuse the row); anything but an object is kept as
    its repr under `_raw`."""
    if isinstance(args, dict):
        return dict(storable_json(dict(args)))
    return {"_raw": storable_text(repr(args)[:1000])}


def storable_text(text: str) -> str:
    """`text` with lone surrogates as U+FFFD and NUL as `\\u0000`: what any store takes.

    For text that comes from the disk or a process, not from a client: a file name
    that is not UTF-8 reaches Python as lone surrogates (os.fsdecode).
    """
    return _SURROGATE.sub(REPLACEMENT, text).replace("\x00", "\\u0000")


def _storable(value: object, depth: int, budget: list[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -MAX_INT - 1 <= value <= MAX_INT else _big_int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return _storable_text(value, budget)
    if isinstance(value, (list, tuple, dict)):
        if depth >= MAX_DEPTH:
            return f"[nested deeper than {MAX_DEPTH} levels: left out]"
        return _storable_container(value, depth, budget)
    return _storable_text(repr(value)[:1000], budget)


def _storable_container(
    value: list[Any] | tuple[Any, ...] | dict[Any, Any], depth: int, budget: list[int]
) -> Any:
    items = value.items() if isinstance(value, dict) else enumerate(value)
    out: dict[str, Any] = {}
    for key, child in items:
        budget[0] -= 1
        if budget[0] < 0:
            out["…"] = "[too large: the rest is left out]"
            break
        out[_storable_text(str(key), budget)] = _storable(child, depth + 1, budget)
    return out if isinstance(value, dict) else list(out.values())


def _storable_text(text: str, budget: list[int]) -> str:
    if budget[0] < len(text):
        kept = max(budget[0], 0)
        text = text[:kept] + f"… [{len(text) - kept} characters left out]"
    budget[0] -= len(text)
    return storable_text(text)


def _big_int(value: int) -> str:
    digits = len(str(abs(value))) if value.bit_length() < 10_000 else None
    if digits is not None and digits <= 100:
        return str(value)
    return f"[an integer of about {int(value.bit_length() * 0.30103)} digits: left out]"


def _scalar_problem(item: object, at: str) -> str | None:
    if isinstance(item, str):
        return text_problem(item, at)
    if isinstance(item, bool):
        return None
    if isinstance(item, int) and not -MAX_INT - 1 <= item <= MAX_INT:
        return f"{_label(at)} is a number too large; integers must fit in 64 bits (±{MAX_INT})"
    if isinstance(item, float) and not math.isfinite(item):
        return f"{_label(at)} is {item}; send a finite number"
    return None


def _checked_int(digits: str) -> int:
    if len(digits.lstrip("-")) > 19 or not -MAX_INT - 1 <= int(digits) <= MAX_INT:
        shown = digits if len(digits) <= 30 else digits[:27] + "..."
        raise UnsafeJSON(f"the number {shown} is too large; integers must fit in 64 bits")
    return int(digits)


def _checked_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        shown = text if len(text) <= 30 else text[:27] + "..."
        raise UnsafeJSON(f"the number {shown} is too large for a 64-bit float")
    return number


def _no_constant(name: str) -> float:
    raise UnsafeJSON(f"{name} is not valid JSON; send a finite number or null")


def _child(where: str, key: object) -> str:
    return f"{where}.{key}" if where else str(key)


def _label(where: str) -> str:
    if len(where) > 80:  # a path forty levels deep says no more than its start
        where = where[:77] + "..."
    return f"`{printable(where)}`" if where else "the value"
