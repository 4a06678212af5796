"""A skill tool's arguments checked against its input schema, with errors that name the
argument (what the agent reads, as for a core tool)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.jsonsafe import printable, storable_args

MAX_MESSAGES = 5


def validate_arguments(name: str, schema: Mapping[str, Any], args: object) -> dict[str, Any]:
    """The arguments as stored, or a ToolError naming every bad argument."""
    if not isinstance(args, Mapping):
        raise ToolError(
            f"Arguments for {name} must be a JSON object of named arguments; "
            f"got {type(args).__name__}."
        )
    clean = storable_args(dict(args))
    if clean != dict(args):
        raise ToolError(f"Invalid arguments for {name}: they hold text no store can keep.")
    validator = Draft202012Validator(dict(schema))
    errors = sorted(validator.iter_errors(clean), key=lambda e: [str(p) for p in e.path])
    if errors:
        messages = [_explain(error) for error in errors[:MAX_MESSAGES]]
        raise ToolError(printable(f"Invalid arguments for {name}: " + "; ".join(messages)))
    return dict(clean)


def _explain(error: ValidationError) -> str:
    where = _argument(error)
    if error.validator == "required":
        return f"missing required argument {error.message.split(' is a required')[0]}"
    if error.validator == "additionalProperties":
        return f"unexpected argument: {error.message}"
    return f"`{where}`: {error.message}" if where else error.message


def _argument(error: ValidationError) -> str:
    parts = list(error.path)
    if not parts:
        return ""
    text = str(parts[0])
    for part in parts[1:]:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text
