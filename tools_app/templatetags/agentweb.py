"""Template tags for showing what agents send: `{% load agentweb %}`.

* `{{ text|reveal }}` — escaped, with hidden characters (bidi, zero-width, ANSI and
  other controls) shown as `<U+202E>`-style markers. Use it for anything an agent wrote.
* `{{ text|hidden_count }}` — how many such characters `text` holds.
* `{{ value|pretty_json }}` — a JSON value indented, as text (then `|reveal` it).
* `{{ value|highlighted_json }}` — a JSON value indented and highlighted, as revealed
  HTML (an MCP upstream call's arguments).
* `{% tool_call call %}` — one tool call as every page shows it (the inbox card, the
  session timeline, the pull request page): its preview by kind (a diff, a command, a
  pull request, a fetch, a sub-agent, a skill), the arguments the agent sent and the
  result, all through `reveal`. `arguments=False` leaves the arguments out.
* `{% diff_view text %}` — a unified diff: per file, +/- counts, folded when large,
  highlighted in the file's language, with line numbers; unified on narrow screens and
  side by side on wide ones (the CSS is in static/agentweb/inbox.css).
"""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from tools_app.core import rendering
from tools_app.models import ToolCall
from tools_app.web import cards

register = template.Library()


@register.filter(is_safe=True)
def reveal(value: Any) -> SafeString:
    return mark_safe(rendering.reveal("" if value is None else str(value)))  # noqa: S308


@register.filter
def hidden_count(value: Any) -> int:
    return rendering.hidden_count("" if value is None else str(value))


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@register.filter(is_safe=True)
def highlighted_json(value: Any) -> SafeString:
    lines = pretty_json(value).splitlines()
    html = rendering.highlight_lines(lines, rendering.lexer_for("arguments.json"))
    return mark_safe("\n".join(html))  # noqa: S308  (highlight_lines reveals every token)


@register.inclusion_tag("tools_app/_diff.html")
def diff_view(text: Any, *, split: bool = True) -> dict[str, Any]:
    """Split views are left out for very large diffs to keep the page light."""
    files = rendering.highlight_diff(rendering.parse_diff(str(text or "")))
    lines = sum(len(f.lines) for f in files)
    split = split and lines <= rendering.HIGHLIGHT_LIMIT
    shown = [{"file": f, "rows": rendering.split_rows(f.lines) if split else None} for f in files]
    # Text that is not a unified diff (no hunk to show) is shown as it is, never hidden.
    raw = str(text or "") if not lines else ""
    hidden = rendering.hidden_count(str(text or ""))
    return {"files": [] if raw else shown, "split": split, "hidden": hidden, "raw": raw}


@register.inclusion_tag("tools_app/_tool_call.html")
def tool_call(call: ToolCall, *, arguments: bool = True) -> dict[str, Any]:
    """The one rendering of a call; the previews read their facts from `card`."""
    view = cards.call_view(call)
    return {"call": call, "card": view, "preview": view["preview"], "arguments": arguments}
