"""An args model's check with errors an agent can act on: every bad argument named,
with what it needs (`ToolSpec.validate` calls it for every core and internal tool)."""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.jsonsafe import printable, text_issue

Model = TypeVar("Model", bound=BaseModel)

__all__ = ["validate_model"]


def validate_model(name: str, model: type[Model], args: object) -> Model:
    """`args` as the tool's args model, or a ToolError naming every bad argument and what
    it needs."""
    if not isinstance(args, Mapping):
        raise ToolError(
            f"Arguments for {name} must be a JSON object of named arguments "
            f"({', '.join(model.model_fields)}); got {type(args).__name__}."
        )
    _check_names(name, args)
    try:
        return model.model_validate(dict(args))
    except ValidationError as error:
        raise ToolError(printable(_explain(name, model, error))) from None


def _check_names(name: str, args: Mapping[Any, Any]) -> None:
    """Argument names are text without surrogates or NUL (the model cannot even report those)."""
    for key in args:
        if not isinstance(key, str):
            raise ToolError(f"Invalid arguments for {name}: names must be strings; got {key!r}")
        issue = text_issue(key)
        if issue:
            shown = printable(key)
            raise ToolError(f"Invalid arguments for {name}: the argument name `{shown}` {issue}")


def _explain(name: str, model: type[BaseModel], error: ValidationError) -> str:
    fields = model.model_fields
    properties = model.model_json_schema().get("properties", {})
    messages: list[str] = []
    seen: set[str] = set()
    for item in error.errors():
        loc = item["loc"]
        field = str(loc[0]) if loc else ""
        index = next((part for part in loc[1:] if isinstance(part, int)), None)
        key = f"{field}[{index}]" if index is not None else field
        if key in seen:
            continue
        seen.add(key)
        if item["type"] == "value_error":  # a validator's own message names the argument
            messages.append(str(item.get("ctx", {}).get("error", item["msg"])))
        elif item["type"] == "extra_forbidden":
            accepted = ", ".join(fields)
            messages.append(f"unexpected argument `{field}`; {name} accepts: {accepted}")
        elif item["type"] == "missing":
            messages.append(f"missing required argument `{field}`")
        elif item["type"] == "string_too_long":
            limit, length = item["ctx"]["max_length"], len(item["input"])
            messages.append(f"`{key}` is too long: {length:,} characters, at most {limit:,}")
        elif index is not None:
            messages.append(f"`{key}` {item['msg'].lower()} (got {_shown(item['input'])})")
        else:
            expected = _expectation(properties.get(field, {}))
            messages.append(f"`{field}` must be {expected} (got {_shown(item['input'])})")
    return f"Invalid arguments for {name}: " + "; ".join(messages)


def _expectation(schema: Mapping[str, Any]) -> str:
    """A phrase for what a JSON Schema property accepts: 'a positive integer' and so on."""
    kind = schema.get("type")
    if "enum" in schema:
        return "one of " + ", ".join(repr(value) for value in schema["enum"])
    bounds = ""
    if "maximum" in schema:
        bounds = f", at most {schema['maximum']:g}"
    if kind in ("integer", "number"):
        noun = "integer" if kind == "integer" else "number"
        if schema.get("minimum") == 1 or "exclusiveMinimum" in schema:
            return f"a positive {noun}{bounds}"
        if "minimum" in schema:
            return f"a {noun} >= {schema['minimum']}{bounds}"
        return f"a {noun}{bounds}"
    if kind == "string":
        return "a non-empty string" if schema.get("minLength") else "a string"
    if kind == "boolean":
        return "true or false"
    if kind == "array":
        return "a list of strings"
    return "a valid value"


_SHORT = reprlib.Repr()
_SHORT.maxstring = 80
_SHORT.maxother = 80
_SHORT.maxlevel = 3


def _shown(value: object) -> str:
    """A short repr, safe for values nested far deeper than the recursion limit."""
    text = _SHORT.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
