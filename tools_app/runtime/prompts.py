"""What the runtime says to a model: the system prompt, nudges, and result texts. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tools_app.runtime.conversation import Message

SYSTEM_PROMPT = """\
You are a coding agent working on a git repository for a team. Your working directory \
is the repository's root; every path you give is relative to it.

You act only through the tools you are given. Every call is checked by the team's \
policy: some run at once, some are denied, and some wait for a human reviewer, who sees \
exactly what the call would do and may approve, edit or deny it. A denied call's result \
tells you why; do not try to get around a denial by spelling the same thing another way.

Work in small, verifiable steps: read before you edit, run the tests, keep changes \
focused on the task. When the task is finished, call task_done with a summary of what \
you did and the files you changed. That is the only way to finish.

Task:
{task}
"""

SUBAGENT_NOTE = """
You are a sub-agent (depth {depth}): a parent agent gave you this subtask. Finish it \
with task_done; your summary is what the parent receives."""

TEXT_ONLY_NUDGE = (
    "You replied without calling a tool. Continue with a tool call, or call task_done "
    "with a summary if the task is finished."
)

REPEAT_NUDGE = (
    "\n\nNote: you have made this exact call {count} times in your last {window} calls. "
    "Its result will not change: try a different approach, or call task_done."
)

SUMMARY_REQUEST = (
    "Summarise the following part of a coding agent's work for the agent itself, who "
    "will continue from it: what it learned, what it changed (files), what failed, and "
    "what remains. Be concise and factual; keep file paths and names exact.\n\n{transcript}"
)


def system_prompt(task: str, *, depth: int, instructions: Sequence[str] = ()) -> str:
    """The session's system prompt: the rules, the task, and any skill instructions."""
    prompt = SYSTEM_PROMPT.format(task=task.strip())
    if depth:
        prompt += SUBAGENT_NOTE.format(depth=depth)
    for text in instructions:
        prompt += "\n\n" + text.strip()
    return prompt


def unknown_tool(name: str, known: Sequence[str]) -> str:
    return f"Unknown tool {name!r}: no tool has that name. The tools are: {', '.join(known)}."


def transcript(messages: Sequence[Message]) -> str:
    """The messages as plain text, for the summariser."""
    lines: list[str] = []
    for message in messages:
        if message["role"] == "user":
            lines.append(f"USER: {message['content']}")
        elif message["role"] == "assistant":
            if message.get("content"):
                lines.append(f"AGENT: {message['content']}")
            for use in message.get("tool_uses", []):
                lines.append(f"AGENT CALLS {use['name']} {_compact(use.get('args', {}))}")
        else:
            for result in message.get("results", []):
                lines.append(f"RESULT of {result['name']}: {_clip(result['content'], 2000)}")
    return "\n".join(lines)


def repeated_count(recent: Sequence[tuple[str, str]], call: tuple[str, str]) -> int:
    return sum(1 for item in recent if item == call)


def call_signature(name: str, args: Any) -> tuple[str, str]:
    return name, _compact(args)


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more chars]"
