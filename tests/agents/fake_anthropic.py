"""A scripted fake of the Anthropic Messages API on 127.0.0.1, for the real Claude Code CLI.

Each conversation request (one that offers tools) is answered by the script: first the
scripted tool use, then, once a tool result came back, a short final text. A `Script`
plays several steps instead: it is given the tool results so far and names the next tool
use, or None for the final text. Anything else (a title, a summary) gets a plain text
answer. Every request body is kept in `requests`, so a test reads what reached the model
(a denial's reason in a tool_result).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

# The tool results of the conversation so far → the next (tool, input), or None: done.
Script = Callable[[list[str]], tuple[str, dict[str, Any]] | None]


class FakeAnthropic:
    def __init__(
        self, tool: str = "", tool_input: dict[str, Any] | None = None, script: Script | None = None
    ) -> None:
        self.script = script or _one_use(tool, tool_input or {})
        self.requests: list[dict[str, Any]] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeAnthropic:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def tool_results(self) -> list[str]:
        """The text of every tool_result the model was sent, in order."""
        return [json.dumps(r, ensure_ascii=False) for b in self.requests for r in _results(b)]

    def conversation(self) -> list[str]:
        """The text of each tool result in the latest conversation, in order."""
        asked = [body for body in self.requests if body.get("tools")]
        return [_text(result) for result in _results(asked[-1])] if asked else []

    def reply(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks of the next answer."""
        step = (
            self.script([_text(result) for result in _results(body)]) if body.get("tools") else None
        )
        if step is None:
            return [{"type": "text", "text": "Done."}]
        use_id = f"toolu_fake_{len(self.requests)}"
        return [{"type": "tool_use", "id": use_id, "name": step[0], "input": step[1]}]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    return self._json({"input_tokens": 10})
                fake.requests.append(body)
                blocks = fake.reply(body)
                if body.get("stream"):
                    return self._stream(body, blocks)
                return self._json(_message(body, blocks))

            def do_GET(self) -> None:
                self._json({"data": [], "has_more": False})

            def do_HEAD(self) -> None:
                self._json({})

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, body: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
                data = b"".join(_sse(name, value) for name, value in _events(body, blocks))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _one_use(tool: str, tool_input: dict[str, Any]) -> Script:
    """One tool use, then the final text once its result came back."""
    return lambda results: None if results else (tool, tool_input)


def _results(body: dict[str, Any]) -> list[Any]:
    """The content of each tool_result in the conversation of one request, in order."""
    found: list[Any] = []
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(block.get("content"))
    return found


def _text(content: Any) -> str:
    """A tool_result's text: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))


def _message(body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-fake"),
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _events(body: dict[str, Any], blocks: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    message = {**_message(body, []), "stop_reason": None}
    events: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    stop = _message(body, blocks)["stop_reason"]
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _sse(name: str, value: Any) -> bytes:
    return f"event: {name}\ndata: {json.dumps(value)}\n\n".encode()
