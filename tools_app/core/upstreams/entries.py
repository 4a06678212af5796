"""An upstream server's entry as a file (and the admin's form) holds it, checked whole:
every problem named, so that a bad entry changes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tools_app.core.egress.patterns import host_pattern_problem
from tools_app.core.tools.netguard import parse_target
from tools_app.core.upstreams.definitions import server_name_problem
from tools_app.core.upstreams.sandbox import path_problem

ENTRY_KEYS = (
    "name",
    "kind",
    "command",
    "url",
    "environment",
    "readonly_paths",
    "writable_paths",
    "network_hosts",
    "credential_name",
    "credential_value",
    "project",
    "enabled",
)
KINDS = ("stdio", "http")
# Variables a server's entry may not set: they would change what runs or where it looks.
RESERVED_VARIABLES = frozenset({"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"})


def entry_problems(data: object) -> list[str]:
    """Every problem with one entry; empty when it can be used."""
    if not isinstance(data, Mapping):
        return ["an upstream entry is a JSON object with a `name`"]
    problems = [
        f"{key}: unknown key (known: {', '.join(ENTRY_KEYS)})"
        for key in data
        if key not in ENTRY_KEYS
    ]
    name = data.get("name")
    if not isinstance(name, str) or (why := server_name_problem(name)):
        problems.append(f"name: {why if isinstance(name, str) else 'must be a string'}")
    kind = data.get("kind", "stdio")
    if kind not in KINDS:
        problems.append(f"kind: must be one of {', '.join(KINDS)}")
    elif kind == "stdio":
        problems += _stdio_problems(data)
    else:
        problems += _http_problems(data)
    credential = data.get("credential_name", "")
    if not isinstance(credential, str) or any(c in credential for c in ":\r\n\0 ="):
        problems.append("credential_name: a header or variable name (no spaces, ':' or '=')")
    if not isinstance(data.get("credential_value", ""), str):
        problems.append("credential_value: must be a string")
    if not isinstance(data.get("enabled", True), bool):
        problems.append("enabled: must be true or false")
    return problems


def _stdio_problems(data: Mapping[str, Any]) -> list[str]:
    problems = []
    command = data.get("command")
    if not _strings(command) or not command:
        problems.append("command: a list of strings, the program first (an absolute path)")
    elif not str(command[0]).startswith("/"):
        problems.append("command: name the program by its absolute path")
    environment = data.get("environment", {})
    if not isinstance(environment, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in environment.items()
    ):
        problems.append("environment: an object of string values")
    else:
        problems += [
            f"environment: {k} may not be set" for k in environment if k in RESERVED_VARIABLES
        ]
    for key in ("readonly_paths", "writable_paths"):
        paths = data.get(key, [])
        if not _strings(paths):
            problems.append(f"{key}: a list of absolute paths")
            continue
        problems += [f"{key}: {why}" for path in paths if (why := path_problem(path))]
    hosts = data.get("network_hosts", [])
    if not _strings(hosts):
        problems.append("network_hosts: a list of host names or patterns")
    else:
        problems += [f"network_hosts: {why}" for h in hosts if (why := host_pattern_problem(h))]
    return problems


def _http_problems(data: Mapping[str, Any]) -> list[str]:
    url = data.get("url")
    if not isinstance(url, str):
        return ["url: the server's http(s) URL"]
    try:
        parse_target(url)
    except ValueError as exc:
        return [f"url: {exc}"]
    return []


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)
