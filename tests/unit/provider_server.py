"""A small real HTTP server on 127.0.0.1 that answers what a test queues and records
every request it received: the model provider's side of the wire, without a mock."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass
class Answer:
    body: object
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class ProviderServer:
    """`answer(...)` queues replies in order; `requests` holds what arrived."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.answers: deque[Answer] = deque()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def __enter__(self) -> ProviderServer:
        self.thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                received = Received("POST", self.path, headers, json.loads(raw or b"null"))
                server.requests.append(received)
                answer = server.answers.popleft() if server.answers else Answer({}, 599)
                time.sleep(answer.delay)
                data = json.dumps(answer.body).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in answer.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
