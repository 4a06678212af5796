"""Small real servers on 127.0.0.1 for the notification tests: a webhook receiver that
checks agentweb's signature itself, a fake Slack Web API, and an SMTP server."""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    signed: bool = False
    at: float = field(default_factory=time.time)  # when it arrived (wall clock)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """Answers each POST with the next of `answers` (then 200), recording it."""

    secret: str = "s3cret-webhook-key"
    answers: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    url: str = ""
    slack_ts: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def check(self, headers: dict[str, str], body: bytes) -> bool:
        """The receiver's own check: t=…,v1=HMAC-SHA256(secret, "t.body"), fresh."""
        header = headers.get("X-Agentweb-Signature", "")
        parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
        stamp = parts.get("t", "")
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > 300:
            return False
        mac = hmac.new(self.secret.encode(), stamp.encode() + b"." + body, hashlib.sha256)
        return hmac.compare_digest(mac.hexdigest(), parts.get("v1", ""))


def serve(receiver: Receiver, slack_token: str = "") -> ThreadingHTTPServer:
    """Start the server in a thread; `slack_token`: speak Slack's Web API instead."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k: v for k, v in self.headers.items()}
            got = Received(self.path, headers, body, receiver.check(headers, body))
            receiver.received.append(got)
            if slack_token:
                return self._slack(got)
            status = receiver.answers.pop(0) if receiver.answers else 200
            if status == 200 and not got.signed:
                status = 401
            self._answer(status, b'{"ok": true}')

        def _slack(self, got: Received) -> None:
            if got.path.startswith("/services/"):  # an incoming webhook: no token, "ok"
                return self._answer(200, b"ok", "text/plain")
            if got.headers.get("Authorization") != f"Bearer {slack_token}":
                return self._answer(200, b'{"ok": false, "error": "invalid_auth"}')
            data = got.json()
            if got.path.endswith("/views.open"):
                if not data.get("trigger_id"):
                    return self._answer(200, b'{"ok": false, "error": "invalid_trigger_id"}')
                return self._answer(200, b'{"ok": true, "view": {"id": "V0FORM"}}')
            ts = data.get("ts") or f"1700000000.{next(receiver.slack_ts):06d}"
            self._answer(
                200, json.dumps({"ok": True, "channel": data["channel"], "ts": ts}).encode()
            )

        def _answer(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    return server


class Mailbox:
    """aiosmtpd's handler: every message it accepts."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.arrived: list[float] = []  # when each came (wall clock)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        self.arrived.append(time.time())
        return "250 OK"


def smtp_server() -> tuple[Controller, Mailbox]:
    """On a free port (aiosmtpd checks its own start by connecting, so not port 0)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    return controller, mailbox


def parts_of(message: Message) -> dict[str, str]:
    """The text and HTML parts of a message, by content type."""
    found: dict[str, str] = {}
    for part in message.walk():
        if part.get_content_maintype() == "text":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            found[part.get_content_type()] = payload.decode()
    return found


class Hanging:
    """A server that is down the worst way: it accepts each connection, takes the request
    and never answers, until `close` (which hangs up on every one)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.accepting = threading.Thread(target=self._accept, daemon=True)
        self.accepting.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.held.append(connection)

    def close(self) -> None:
        """Stop accepting (a shutdown wakes the blocked accept; a close alone would not),
        then hang up on every connection held."""
        self.listener.shutdown(socket.SHUT_RDWR)
        self.accepting.join(timeout=5)
        self.listener.close()
        for connection in self.held:
            connection.close()
