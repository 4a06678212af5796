"""A third-party MCP server's tool as agentweb pins it: its definition (name, description,
input schema, annotations), the fingerprint an admin accepts, the diff an admin reviews
when it changes, and what in it looks aimed at the model rather than at a person.

A tool is listed to agents as `SERVER__TOOL` and judged by the policy as
`mcp.SERVER.TOOL` (`tools/catalogue.py` spells both), so that a rule's glob
(`mcp.git.*`) reads like the rest of the policy.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tools_app.core.tools.catalogue import UPSTREAM_PREFIX

LISTED_SEPARATOR = "__"
# A server's name: what `SERVER` is in `SERVER__TOOL` and `mcp.SERVER.TOOL`; no dot and no
# double underscore, so that both names split back into exactly one server and tool.
SERVER_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]|_(?!_))*[a-z0-9]$|^[a-z0-9]$")
MAX_SERVER_NAME = 40

# Annotations are hints a server gives about itself; the policy reads only these four.
ANNOTATION_KEYS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")

# Words a tool's description addresses to the model instead of describing the tool: the
# shapes of known tool-poisoning attacks (hidden instructions, exfiltration, secrecy).
_AIMED_AT_MODEL = (
    (
        r"ignore (all |any )?(previous|prior|above|earlier) (instructions|messages|rules)",
        "tells the model to ignore its instructions",
    ),
    (
        r"(do not|don't|never) (tell|inform|mention|show|reveal)[^.]{0,40}(user|human|person)",
        "asks the model to hide something from the user",
    ),
    (
        r"~/\.ssh|id_rsa|id_ed25519|\.aws/credentials|\.netrc|\.env\b|private key",
        "names credentials or key files",
    ),
    (r"<\s*(important|system|instructions?|secret)\s*>", "holds a tag aimed at the model"),
    (
        r"\b(send|upload|post|exfiltrate|forward)\b[^.]{0,60}"
        r"\b(contents?|files?|keys?|tokens?|secrets?|credentials?|passwords?)\b",
        "asks to send files or secrets somewhere",
    ),
    (
        r"before (using|calling) (this|any other) tool[^.]{0,40}(read|call|run)",
        "tells the model to do something first",
    ),
)
_AIMED = tuple((re.compile(pattern, re.IGNORECASE), why) for pattern, why in _AIMED_AT_MODEL)
# Characters a person does not see: bidi controls, zero-width and invisible formatting
# characters, C0/C1 controls except tab and newline, and the Unicode tag block
# (invisible ASCII look-alikes that models read).
_HIDDEN = re.compile(
    "[\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060-\u2064\ufeff\u061c\u00ad"
    "\x00-\x08\x0b-\x1f\x7f-\x9f\U000e0000-\U000e007f]"
)


@dataclass(frozen=True)
class Definition:
    """One tool of an upstream server as it listed it."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    annotations: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Definition:
        annotations = data.get("annotations") or {}
        schema = data.get("input_schema") or data.get("inputSchema") or {"type": "object"}
        return cls(
            name=str(data.get("name", "")),
            description=str(data.get("description") or ""),
            input_schema=dict(schema) if isinstance(schema, Mapping) else {"type": "object"},
            annotations={k: annotations[k] for k in ANNOTATION_KEYS if k in annotations}
            if isinstance(annotations, Mapping)
            else {},
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "annotations": dict(self.annotations),
        }

    def fingerprint(self) -> str:
        """SHA-256 of the definition's canonical JSON: what an admin accepts."""
        return fingerprint_of(self.as_dict())

    def only_reads(self) -> bool:
        """What the server says of the tool, read strictly: it declares that it only
        reads, and nothing that says it destroys or reaches the open world."""
        hints = self.annotations
        return (
            hints.get("readOnlyHint") is True
            and hints.get("destructiveHint") is not True
            and hints.get("openWorldHint") is not True
        )


def fingerprint_of(definition: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical(definition).encode("utf-8", "surrogatepass")).hexdigest()


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def definition_diff(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str:
    """A unified diff of two definitions' pretty JSON (an empty side: new or vanished)."""

    def lines(value: Mapping[str, Any] | None) -> list[str]:
        if value is None:
            return []
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
        return [line + "\n" for line in text.splitlines()]

    return "".join(difflib.unified_diff(lines(old), lines(new), "accepted", "listed now"))


def definition_flags(definition: Mapping[str, Any]) -> list[str]:
    """What in a definition looks aimed at the model, for the admin page: hidden
    characters anywhere, and instruction-like phrases in any text of it."""
    strings = " ".join(_strings(definition))
    flags = []
    hidden = _HIDDEN.findall(strings)
    if hidden:
        codes = ", ".join(sorted({f"U+{ord(char):04X}" for char in hidden}))
        flags.append(f"{len(hidden)} hidden character(s): {codes}")
    flags += [why for pattern, why in _AIMED if pattern.search(strings)]
    return flags


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for key, item in value.items() for s in [str(key), *_strings(item)]]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return []


def server_name_problem(name: str) -> str | None:
    """Why `name` cannot name a server, or None."""
    if len(name) > MAX_SERVER_NAME or not SERVER_NAME.match(name):
        return (
            f"{name!r} cannot name a server: use at most {MAX_SERVER_NAME} lower-case letters, "
            "digits, hyphens and single underscores, starting and ending with a letter or digit"
        )
    return None


def listed_name(server: str, tool: str) -> str:
    """The name an agent sees: `SERVER__TOOL`."""
    return f"{server}{LISTED_SEPARATOR}{tool}"


def split_listed(name: str) -> tuple[str, str] | None:
    """(server, tool) of `SERVER__TOOL`, or None for any other name."""
    server, separator, tool = name.partition(LISTED_SEPARATOR)
    return (server, tool) if separator and server and tool else None


def judged_name(server: str, tool: str) -> str:
    """The name the policy judges and a call is stored under: `mcp.SERVER.TOOL`."""
    return f"{UPSTREAM_PREFIX}{server}.{tool}"


def split_judged(name: str) -> tuple[str, str]:
    """(server, tool) of `mcp.SERVER.TOOL`."""
    server, _, tool = name.removeprefix(UPSTREAM_PREFIX).partition(".")
    return server, tool
