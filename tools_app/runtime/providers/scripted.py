"""The scripted provider (`script:PATH`): a fixed list of steps replayed as model turns.

It keeps no state: the next reply follows from how many assistant messages the
conversation already holds, so a session resumed in another process (after an approval
or a restart) gets the same next step. Steps are grouped into replies as a model would
send them: the `say` steps before a `tool` step become that call's text.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tools_app.runtime.conversation import (
    Message,
    ProviderError,
    Reply,
    ToolSchema,
    ToolUse,
    Usage,
)

SCRIPT_CONTEXT_WINDOW = 200_000
END_OF_SCRIPT = "The script has ended: it has no more steps."
STEP_FORMS = 'each step is {"tool": NAME, "args": {...}} or {"say": TEXT}'


def estimate_tokens(text: str) -> int:
    """About four characters a token: enough for budgets and context limits to be tested."""
    return math.ceil(len(text) / 4)


class ScriptedProvider:
    """Replays a script file; raises ProviderError at construction when the file is unusable."""

    def __init__(self, path: str | Path, *, context_window: int = SCRIPT_CONTEXT_WINDOW) -> None:
        self.path = Path(path)
        self.spec = f"script:{path}"
        self.context_window = context_window
        self.replies = group_steps(load_steps(self.path))

    def complete(self, *, system: str, messages: list[Message], tools: list[ToolSchema]) -> Reply:
        done = sum(1 for message in messages if message.get("role") == "assistant")
        reply = self.replies[done] if done < len(self.replies) else Reply(text=END_OF_SCRIPT)
        prompt = system + json.dumps(messages) + json.dumps([tool.name for tool in tools])
        answer = reply.text + json.dumps([use.as_message_part() for use in reply.tool_uses])
        usage = Usage(input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(answer))
        stop = "tool_use" if reply.tool_uses else "end_turn"
        return Reply(text=reply.text, tool_uses=reply.tool_uses, usage=usage, stop_reason=stop)


def load_steps(path: Path) -> list[dict[str, Any]]:
    """The steps of a script file, each checked; the error names the file and the step."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProviderError(f"script {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ProviderError(f"script {path}: cannot read it: {error}") from None
    except json.JSONDecodeError as error:
        raise ProviderError(f"script {path}: not valid JSON: {error}") from None
    if not isinstance(data, list):
        raise ProviderError(f"script {path}: expected a JSON list of steps; {STEP_FORMS}")
    for index, step in enumerate(data):
        problem = step_problem(step)
        if problem:
            raise ProviderError(f"script {path}: step {index}: {problem}; {STEP_FORMS}")
    return data


def step_problem(step: object) -> str:
    """Why a step cannot be replayed, or "" when it can."""
    if not isinstance(step, dict):
        return f"expected an object, got {type(step).__name__}"
    keys = set(step)
    if "say" in keys:
        if keys != {"say"}:
            return f"a 'say' step has no other keys (found {sorted(keys - {'say'})})"
        return "" if isinstance(step["say"], str) else "'say' must be a string"
    if "tool" not in keys:
        return f"neither 'tool' nor 'say' (keys: {sorted(keys)})"
    if keys - {"tool", "args"}:
        return f"unknown keys {sorted(keys - {'tool', 'args'})}"
    if not isinstance(step["tool"], str) or not step["tool"].strip():
        return "'tool' must be a non-empty string"
    if not isinstance(step.get("args", {}), dict):
        return "'args' must be an object"
    return ""


def group_steps(steps: list[dict[str, Any]]) -> list[Reply]:
    """One reply per tool step (with the text said before it), and one for trailing text."""
    replies: list[Reply] = []
    said: list[str] = []
    for step in steps:
        if "say" in step:
            said.append(step["say"])
            continue
        use = ToolUse(
            id=f"script-{len(replies) + 1}", name=step["tool"], args=dict(step.get("args", {}))
        )
        replies.append(Reply(text="\n\n".join(said), tool_uses=(use,)))
        said = []
    if said:
        replies.append(Reply(text="\n\n".join(said)))
    return replies
