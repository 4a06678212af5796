"""The tiny threaded HTTP server under the scripted fakes of the model APIs (Anthropic,
OpenAI Responses, Gemini): 127.0.0.1 on a free port, every request kept in `log` as
(method, path, JSON body), and a subclass's `answer` deciding each reply."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: a JSON value, or server-sent events (`events` as (name, data)
    pairs; a None name sends bare `data:` lines, as the Gemini API does)."""

    json: Any = None
    events: tuple[tuple[str | None, Any], ...] = ()
    status: int = 200


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    body: Any


class FakeServer:
    def __init__(self) -> None:
        self.log: list[Seen] = []
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> Self:
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

    def answer(self, seen: Seen) -> Reply:
        raise NotImplementedError

    def receive(self, seen: Seen) -> Reply:
        with self.lock:  # one scripted turn at a time: the script counts requests
            self.log.append(seen)
            return self.answer(seen)


def _sse(name: str | None, value: Any) -> bytes:
    data = f"data: {json.dumps(value)}\n\n"
    return (f"event: {name}\n" + data if name else data).encode()


def _handler(fake: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"raw": raw.decode(errors="replace")}
            self._send(fake.receive(Seen("POST", self.path, body)))

        def do_GET(self) -> None:
            self._send(fake.receive(Seen("GET", self.path, None)))

        def do_HEAD(self) -> None:
            self._send(Reply(json={}))

        def _send(self, reply: Reply) -> None:
            if reply.events:
                data = b"".join(_sse(name, value) for name, value in reply.events)
                kind = "text/event-stream"
            else:
                data, kind = json.dumps(reply.json).encode(), "application/json"
            self.send_response(reply.status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
