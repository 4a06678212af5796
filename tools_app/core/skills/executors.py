"""What a skill tool does: its executor, checked, previewed and run.

* `command`: a command template run in the session's workspace through run_command's
  copy-on-write sandbox. The arguments are the JSON on its stdin and one
  `AGENTWEB_ARG_<NAME>` environment variable each; they are never put into the shell
  string, so no argument can change the command that runs.
* `http`: the arguments POSTed (or PUT/PATCHed) as a JSON body to a fixed URL, through
  web_fetch's SSRF-safe client; a redirect is followed only on the URL's own host. Header
  values name a setting or environment variable (`{"env": "NAME"}`); the secret is read
  when the call runs, never stored or shown, and never sent to a host the skill did not name.
* `prompt`: nothing runs; the result is a text template rendered with the arguments
  (`$name`, `string.Template`: no attribute access). A template whose placeholders the
  arguments would never fill (`$name` of no argument, `{name}` of another style) is
  refused when the skill is saved.

A call is bound to a `SkillCall`, the definition captured when the policy judged it: what
a reviewer approved is what runs, whatever the skill says by then.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tools_app.core.tools import processes, shell
from tools_app.core.tools.base import ToolContext
from tools_app.core.tools.catalogue import qualified_skill_tool
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.netguard import parse_target
from tools_app.core.tools.web import WebFetchArgs, fetch

KINDS = ("command", "http", "prompt")
HTTP_METHODS = ("POST", "PUT", "PATCH")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_PROMPT_CHARS = 100_000
MAX_TIMEOUT = shell.MAX_TIMEOUT
Secrets = Callable[[str], str | None]


@dataclass(frozen=True)
class SkillCall:
    """One skill tool as a call is bound to it."""

    skill: str
    tool: str
    executor: Mapping[str, Any]
    input_schema: Mapping[str, Any]

    @property
    def name(self) -> str:
        return qualified_skill_tool(self.skill, self.tool)

    @property
    def kind(self) -> str:
        return str(self.executor.get("kind", ""))

    def as_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "tool": self.tool,
            "executor": dict(self.executor),
            "input_schema": dict(self.input_schema),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SkillCall:
        return cls(
            skill=str(data["skill"]),
            tool=str(data["tool"]),
            executor=dict(data["executor"]),
            input_schema=dict(data["input_schema"]),
        )


# --- checking a definition -----------------------------------------------------------------


def executor_problem(executor: object) -> str | None:
    """Why `executor` cannot run, or None; `{}` (no executor yet) is allowed."""
    if not isinstance(executor, Mapping):
        return "must be a JSON object with a `kind`"
    if not executor:
        return None
    kind = executor.get("kind")
    checks = {"command": _command_problem, "http": _http_problem, "prompt": _prompt_problem}
    if kind not in checks:
        return f"`kind` must be one of {', '.join(KINDS)}"
    return checks[str(kind)](executor)


def _command_problem(executor: Mapping[str, Any]) -> str | None:
    if set(executor) - {"kind", "command", "timeout"}:
        return "a command executor has `command` and optionally `timeout`"
    command = executor.get("command")
    if not isinstance(command, str) or not command.strip():
        return "`command` must be a non-empty string"
    timeout = executor.get("timeout", processes.DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        return "`timeout` must be a number of seconds"
    if not 0 < timeout <= MAX_TIMEOUT:
        return f"`timeout` must be more than 0 and at most {MAX_TIMEOUT:g} seconds"
    return None


def _http_problem(executor: Mapping[str, Any]) -> str | None:
    if set(executor) - {"kind", "url", "method", "headers"}:
        return "an http executor has `url` and optionally `method` and `headers`"
    url = executor.get("url")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
        return "`url` must be an http:// or https:// URL"
    if not urlsplit(url).hostname:
        return "`url` must name a host"
    if str(executor.get("method", "POST")).upper() not in HTTP_METHODS:
        return f"`method` must be one of {', '.join(HTTP_METHODS)}"
    headers = executor.get("headers", {})
    if not isinstance(headers, Mapping):
        return '`headers` must map header names to {"env": NAME}'
    for name, value in headers.items():
        if not isinstance(value, Mapping) or set(value) != {"env"}:
            return (
                f'header {name!r}: give the value as {{"env": "NAME"}}, the setting or '
                "environment variable that holds it; secrets are never stored in a skill"
            )
        if not isinstance(value["env"], str) or not ENV_NAME.match(value["env"]):
            return f"header {name!r}: `env` must be a variable name such as MY_TOKEN"
    return None


def _prompt_problem(executor: Mapping[str, Any]) -> str | None:
    if set(executor) - {"kind", "template"}:
        return "a prompt executor has `template` only"
    if not isinstance(executor.get("template"), str):
        return "`template` must be a string"
    return None


# `{name}`, `{{ name }}` and `%(name)s`: other templating styles, never filled here.
_FOREIGN_PLACEHOLDER = re.compile(
    r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|(?<![${])\{([A-Za-z_][A-Za-z0-9_]*)\}"
    r"|%\(([A-Za-z_][A-Za-z0-9_]*)\)[sdr]"
)


def unfilled_placeholders(template: str, input_schema: Mapping[str, Any]) -> list[str]:
    """The placeholders of a prompt template that its arguments would never fill, as
    written: `$name` for a name that is not an argument, and `{name}`-style ones."""
    properties = input_schema.get("properties")
    names = set(properties) if isinstance(properties, Mapping) else set()
    found = [f"${name}" for name in string.Template(template).get_identifiers()]
    found = [shown for shown in found if shown[1:] not in names]
    found += [match.group(0) for match in _FOREIGN_PLACEHOLDER.finditer(template)]
    return list(dict.fromkeys(found))


def template_problem(executor: Mapping[str, Any], input_schema: Mapping[str, Any]) -> str | None:
    """Why a prompt template would reach the agent with placeholders left in, or None."""
    if executor.get("kind") != "prompt":
        return None
    unfilled = unfilled_placeholders(str(executor.get("template", "")), input_schema)
    if not unfilled:
        return None
    properties = input_schema.get("properties")
    arguments = ", ".join(sorted(properties)) if isinstance(properties, Mapping) else ""
    return (
        f"these placeholders would never be filled: {', '.join(unfilled)}. A prompt template "
        "fills $name or ${name} from the tool's arguments (the inputSchema's properties: "
        f"{arguments or 'none'}); write $$ for a literal $"
    )


# --- what a reviewer sees --------------------------------------------------------------------


def arguments_json(args: Mapping[str, Any]) -> str:
    return json.dumps(dict(args), ensure_ascii=False, sort_keys=True)


def argument_env(args: Mapping[str, Any]) -> dict[str, str]:
    """`AGENTWEB_ARG_<NAME>`: a string as it is, anything else as JSON."""
    env = {}
    for name, value in args.items():
        key = "AGENTWEB_ARG_" + re.sub(r"[^A-Z0-9_]", "_", name.upper())
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        env[key] = text.replace("\0", "")
    return env


def render_prompt(
    template: str, args: Mapping[str, Any], input_schema: Mapping[str, Any] | None = None
) -> str:
    """The text with every argument filled in; an argument of the schema that the agent
    left out fills as empty text, so no `$name` reaches the agent unrendered."""
    properties = (input_schema or {}).get("properties")
    values = dict.fromkeys(properties, "") if isinstance(properties, Mapping) else {}
    values |= {k: v if isinstance(v, str) else json.dumps(v) for k, v in args.items()}
    return string.Template(template).safe_substitute(values)[:MAX_PROMPT_CHARS]


def preview(call: SkillCall, args: Mapping[str, Any]) -> dict[str, Any]:
    """The skill, the executor and exactly what it would be given; `definition` is what
    runs once approved."""
    shown: dict[str, Any] = {"skill": call.skill, "tool": call.tool, "executor": call.kind}
    executor = call.executor
    if call.kind == "command":
        shown |= {
            "command": executor["command"],
            "stdin": arguments_json(args),
            "env": argument_env(args),
            "timeout": executor.get("timeout", processes.DEFAULT_TIMEOUT),
        }
    elif call.kind == "http":
        shown |= {
            "method": str(executor.get("method", "POST")).upper(),
            "url": executor["url"],
            "body": arguments_json(args),
            "headers": {k: f"from {v['env']}" for k, v in executor.get("headers", {}).items()},
        }
    elif call.kind == "prompt":
        shown["text"] = render_prompt(str(executor["template"]), args, call.input_schema)
    return shown | {"definition": call.as_dict()}


# --- running -----------------------------------------------------------------------------------


def run(call: SkillCall, args: Mapping[str, Any], ctx: ToolContext) -> str:
    """Run the captured definition; a ToolError is a result the agent reads. An http
    tool's header secrets come from `ctx.secrets`."""
    if call.kind == "command":
        return _run_command(call, args, ctx)
    if call.kind == "http":
        return _run_http(call, args, ctx, ctx.secrets or _no_secrets)
    if call.kind == "prompt":
        return render_prompt(str(call.executor["template"]), args, call.input_schema)
    raise ToolError(
        f"{call.name} has no executor: its skill's author must give it one "
        "(command, http or prompt) before it can run."
    )


def _no_secrets(_: str) -> None:
    return None


def _run_command(call: SkillCall, args: Mapping[str, Any], ctx: ToolContext) -> str:
    timeout = float(call.executor.get("timeout", processes.DEFAULT_TIMEOUT))
    return shell.run_argv(
        ctx,
        ["bash", "-c", str(call.executor["command"])],
        timeout=timeout,
        stdin=arguments_json(args).encode(),
        env=argument_env(args),
    )


def _run_http(call: SkillCall, args: Mapping[str, Any], ctx: ToolContext, secrets: Secrets) -> str:
    headers = {"Content-Type": "application/json"}
    for name, ref in call.executor.get("headers", {}).items():
        value = secrets(str(ref["env"]))
        if value is None:
            raise ToolError(
                f"{call.name} needs the secret {ref['env']} for its {name} header, and this "
                "server does not offer it to skills; ask an admin to set it and list its "
                "name in AGENTWEB_SKILL_SECRETS."
            )
        headers[name] = value
    url = str(call.executor["url"])
    request = WebFetchArgs(
        url=url,
        method=str(call.executor.get("method", "POST")).upper(),
        headers=headers,
        body=arguments_json(args),
    )
    return fetch(request, ctx.sandbox.web_allow_hosts, stay_on=skill_host(url))


def skill_host(url: str) -> str:
    """The one host an http skill tool names: its requests, redirects included, go
    nowhere else (the policy judged that host; its secrets are meant for it)."""
    return parse_target(url).host
