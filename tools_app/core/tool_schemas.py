"""Tool schemas in the shapes that model providers read."""

from __future__ import annotations

from typing import Any


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
