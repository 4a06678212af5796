"""Tool schemas in the shapes that model providers read."""

from __future__ import annotations

from typing import Any

from tools_app.tools import core_tool_schemas


def core_tools() -> list[dict[str, Any]]:
    return core_tool_schemas()


def in_format(tools: list[dict[str, Any]], format: str) -> list[dict[str, Any]]:
    """`json` and `anthropic`: {name, description, input_schema}; `openai`: function tools."""
    if format == "openai":
        return [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool["input_schema"],
                },
            }
            for tool in tools
        ]
    return [
        {"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}
        for t in tools
    ]
