"""web_fetch: one HTTP(S) request for an agent, bounded in time, size and reach.

Bounded in reach: only public addresses unless the policy names the host (see
netguard), checked again on every redirect, with the connection pinned to the checked
address. Bounded in size and time: the body is inflated here, never past a byte cap
(a gzip bomb stays small), and one deadline covers the whole fetch (a slow drip ends).
"""

from __future__ import annotations

import codecs
import contextlib
import json
import re
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from http.cookiejar import CookieJar, DefaultCookiePolicy
from ipaddress import IPv6Address
from typing import Annotated
from urllib.parse import urljoin, urlsplit

import httpx
from pydantic import Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from tools_app.core.tools import netguard
from tools_app.core.tools.base import MAX_NAME_CHARS, MAX_TEXT_CHARS, ToolArgs, ToolContext
from tools_app.core.tools.errors import ToolError
from tools_app.core.tools.files import drop_default
from tools_app.core.tools.netguard import IPAddress, Target

__all__ = [
    "WEB_FETCH_DESCRIPTION",
    "WebFetchArgs",
    "web_fetch",
    "web_fetch_with",
]

DEFAULT_MAX_LENGTH = 50_000
MAX_URL_CHARS = 8192  # what common servers and proxies accept in a request line
DEADLINE_SECONDS = 30.0
CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 10.0
MAX_REDIRECTS = 5
MIN_BYTE_CAP = 1024 * 1024
MAX_BYTE_CAP = 10 * 1024 * 1024
MAX_ADDRESSES_TRIED = 3
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
USER_AGENT = "agentweb-web_fetch/1"
# Hop-by-hop headers, and those the transport must own (framing, Host, decoding).
_HOP_BY_HOP = ("connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade")
DROPPED_HEADERS = frozenset((*_HOP_BY_HOP, "host", "content-length", "accept-encoding"))
CROSS_ORIGIN_DROPPED = frozenset({"authorization", "cookie", "proxy-authorization"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TEXT_SUBTYPES = ("json", "xml", "javascript", "ecmascript", "x-javascript", "x-ndjson")
_MORE_TEXT_SUBTYPES = ("x-www-form-urlencoded", "yaml", "x-yaml", "toml", "graphql", "sql")
TEXT_TYPES = frozenset(f"application/{name}" for name in (*_TEXT_SUBTYPES, *_MORE_TEXT_SUBTYPES))
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")

WEB_FETCH_DESCRIPTION = (
    "Fetch a URL over HTTP or HTTPS and return the status line, then the response body as "
    "text. JSON is pretty-printed, binary content is summarised by its size, and long "
    f"bodies are cut at max_length characters. Redirects are followed (at most {MAX_REDIRECTS})."
    " Only public addresses can be reached unless the policy allows the host."
)


class WebFetchArgs(ToolArgs):
    url: str = Field(
        max_length=MAX_URL_CHARS, description="URL to fetch (http:// or https:// only)."
    )
    method: str = Field(
        default="GET",
        max_length=MAX_NAME_CHARS,
        description=f"HTTP method: one of {', '.join(METHODS)}. Default: GET.",
    )
    headers: dict[str, str] | SkipJsonSchema[None] = Field(
        default=None,
        description="Custom request headers, name to value.",
        json_schema_extra=drop_default,
    )
    body: Annotated[str, Field(max_length=MAX_TEXT_CHARS)] | SkipJsonSchema[None] = Field(
        default=None,
        description="Request body (sent as UTF-8).",
        json_schema_extra=drop_default,
    )
    max_length: int = Field(
        default=DEFAULT_MAX_LENGTH,
        ge=1,
        description=f"Maximum characters of the response to return "
        f"(default: {DEFAULT_MAX_LENGTH}).",
    )

    @field_validator("url")
    @classmethod
    def _url_is_fetchable(cls, url: str) -> str:
        netguard.parse_target(url)
        return url

    @field_validator("method")
    @classmethod
    def _known_method(cls, method: str) -> str:
        if method.upper() not in METHODS:
            raise ValueError(f"method {method!r} is not supported; use one of {', '.join(METHODS)}")
        return method.upper()

    @field_validator("headers")
    @classmethod
    def _clean_headers(cls, headers: dict[str, str] | None) -> dict[str, str] | None:
        for name, value in (headers or {}).items():
            if not _TOKEN.match(name):
                raise ValueError(f"header name {name!r} is not a valid HTTP header name")
            if any(char in value for char in "\r\n\0"):
                raise ValueError(f"header {name!r} contains a line break or NUL; remove it")
        return headers


def web_fetch(ctx: ToolContext, args: WebFetchArgs) -> str:
    """Fetch with the hosts the policy allows, carried by the sandbox options."""
    return fetch(args, ctx.sandbox.web_allow_hosts)


def web_fetch_with(
    allow_hosts: Sequence[str], *, deadline: float = DEADLINE_SECONDS
) -> Callable[[ToolContext, WebFetchArgs], str]:
    """A web_fetch bound to an allow list (and, for tests, a shorter deadline)."""
    hosts = tuple(allow_hosts)

    def run(ctx: ToolContext, args: WebFetchArgs) -> str:
        return fetch(args, hosts, deadline=deadline)

    return run


# --- the request loop ----------------------------------------------------------------


@dataclass(frozen=True)
class _Hop:
    """One request of the chain; a redirect makes the next one."""

    url: str
    method: str
    headers: dict[str, str]
    body: bytes | None


@dataclass(frozen=True)
class _Clock:
    """One deadline for the whole fetch: lookups, connects, redirects and the body."""

    seconds: float
    start: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self.start)

    def timeout(self) -> httpx.Timeout:
        left = max(self.remaining(), 0.01)
        connect, read = min(CONNECT_TIMEOUT, left), min(READ_TIMEOUT, left)
        return httpx.Timeout(connect=connect, read=read, write=read, pool=connect)

    def check(self, url: str, received: int) -> None:
        if self.remaining() <= 0:
            raise ToolError(
                f"timed out after {self.seconds:g} s fetching {url} ({received} bytes of the "
                "body received); the server is slow or never finishes the response — retry "
                "later, or ask for less (a smaller page, a Range header)."
            )


def fetch(
    args: WebFetchArgs,
    allow_hosts: Sequence[str],
    *,
    deadline: float = DEADLINE_SECONDS,
    stay_on: str | None = None,
) -> str:
    """Send the request, follow up to MAX_REDIRECTS redirects by hand, render the answer.

    `stay_on` names the one host a redirect may lead to (a skill's secret headers and
    body go nowhere else); a redirect elsewhere, or from https to http, is refused.
    """
    clock = _Clock(deadline)
    body = args.body.encode() if args.body is not None else None
    hop = _Hop(args.url, args.method, _agent_headers(args.headers or {}), body)
    with _client() as client:
        for redirects in range(MAX_REDIRECTS + 1):
            if redirects and stay_on is not None:
                _stays_on(args.url, hop.url, stay_on)
            target, addresses = _vet(hop.url, allow_hosts, redirected=redirects > 0)
            with _send(client, hop, target, addresses, clock) as response:
                location = response.headers.get("location")
                if response.status_code not in REDIRECTS or location is None:
                    return _render(response, hop, args.max_length, clock, redirects > 0)
            hop = _follow(hop, response.status_code, location)
    raise ToolError(
        f"stopped after {MAX_REDIRECTS} redirects (the next was to {hop.url}); the server "
        "redirects in a loop or too often — fetch the final URL directly."
    )


def _stays_on(first: str, url: str, host: str) -> None:
    """Refuse a redirect that leaves `host`, or that drops https for http."""
    try:
        target = netguard.parse_target(url)
    except ValueError as error:
        raise ToolError(f"the server redirected to {url}, which is refused: {error}") from None
    if not netguard.host_allowed(target, (host,)):
        raise ToolError(
            f"the server redirected to {url}, on the host {target.host}, which this call may "
            f"not reach: it names only {host}. Nothing was sent to {target.host} (no headers, "
            "no body); point the URL at the final address instead."
        )
    if urlsplit(first).scheme.lower() == "https" and target.scheme != "https":
        raise ToolError(
            f"the server redirected from https to {url}; the request is not sent over plain "
            "http (its headers and body would travel unencrypted)."
        )


def _client() -> httpx.Client:
    """No proxies or certificates from the environment, no redirects, no cookies kept."""
    return httpx.Client(
        trust_env=False,
        follow_redirects=False,
        cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
        headers={"User-Agent": USER_AGENT, "Accept": "*/*", "Accept-Encoding": "gzip, deflate"},
    )


def _agent_headers(headers: dict[str, str]) -> dict[str, str]:
    """The agent's headers without those that would reframe or retarget the request."""
    nominated = {
        token.strip().lower()
        for name, value in headers.items()
        if name.lower() == "connection"
        for token in value.split(",")
    }
    return {
        name: value
        for name, value in headers.items()
        if name.lower() not in DROPPED_HEADERS | nominated and not name.lower().startswith("proxy-")
    }


def _vet(
    url: str, allow_hosts: Sequence[str], *, redirected: bool
) -> tuple[Target, list[IPAddress]]:
    """Parse, resolve once and check every address; refuse with a reason otherwise."""
    prefix = f"the server redirected to {url}, which web_fetch refuses: " if redirected else ""
    try:
        target = netguard.parse_target(url)
    except ValueError as error:
        raise ToolError(f"{prefix}{error}") from None
    try:
        addresses = netguard.resolve(target)
    except (OSError, UnicodeError) as error:
        raise ToolError(
            f"could not resolve the host {target.host} ({error}); check its spelling — this "
            "machine may also have no access to the internet."
        ) from None
    reason = netguard.refusal(target, addresses, allow_hosts)
    if reason is not None:
        raise ToolError(f"{prefix}{reason}")
    return target, addresses


@contextlib.contextmanager
def _send(
    client: httpx.Client, hop: _Hop, target: Target, addresses: list[IPAddress], clock: _Clock
) -> Iterator[httpx.Response]:
    """Send to the checked addresses in turn (the next only when a connect fails)."""
    last: httpx.HTTPError | None = None
    for ip in addresses[:MAX_ADDRESSES_TRIED]:
        clock.check(hop.url, 0)
        request = _pinned_request(client, hop, target, ip, clock)
        try:
            response = client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout) as error:
            last = error
            continue
        except httpx.HTTPError as error:
            raise _transport_error(error, hop.url, clock) from None
        try:
            yield response
        except httpx.HTTPError as error:
            raise _transport_error(error, hop.url, clock) from None
        finally:
            response.close()
        return
    raise _transport_error(last or httpx.ConnectError("no address"), hop.url, clock) from None


def _pinned_request(
    client: httpx.Client, hop: _Hop, target: Target, ip: IPAddress, clock: _Clock
) -> httpx.Request:
    """The request addressed to `ip` itself, with the original Host and TLS server name."""
    parts = urlsplit(hop.url)
    host = f"[{ip}]" if isinstance(ip, IPv6Address) else str(ip)
    query = f"?{parts.query}" if parts.query else ""
    url = f"{target.scheme}://{host}:{target.port}{parts.path or '/'}{query}"
    sni = {"sni_hostname": target.host} if target.scheme == "https" and target.ip is None else {}
    return client.build_request(
        hop.method,
        url,
        headers={**hop.headers, "Host": target.authority},
        content=hop.body,
        timeout=clock.timeout(),
        extensions=sni,
    )


def _follow(hop: _Hop, status: int, location: str) -> _Hop:
    """The next hop as browsers make it: 303 (and 301/302 after POST) turn into a GET."""
    url = urljoin(hop.url, location)
    headers = dict(hop.headers)
    if _origin(url) != _origin(hop.url):
        headers = {k: v for k, v in headers.items() if k.lower() not in CROSS_ORIGIN_DROPPED}
    if (status == 303 and hop.method != "HEAD") or (status in (301, 302) and hop.method == "POST"):
        headers = {k: v for k, v in headers.items() if not k.lower().startswith("content-")}
        return _Hop(url, "GET", headers, None)
    return replace(hop, url=url, headers=headers)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        return parts.scheme.lower(), (parts.hostname or ""), parts.port
    except ValueError:
        return parts.scheme.lower(), parts.netloc, None


def _transport_error(error: httpx.HTTPError, url: str, clock: _Clock) -> ToolError:
    """What failed, in words an agent can act on."""
    text = str(error) or type(error).__name__
    if isinstance(error, httpx.TimeoutException):
        return ToolError(
            f"timed out fetching {url}: no answer within {min(READ_TIMEOUT, clock.seconds):g} s "
            "(the server is slow or unreachable); retry later or try another source."
        )
    if isinstance(error, httpx.ConnectError):
        if "refused" in text.lower():
            return ToolError(
                f"connection refused by {url}: nothing listens there; check the host and port."
            )
        if "certificate" in text.lower():
            return ToolError(f"the TLS certificate of {url} did not verify ({text}).")
        return ToolError(f"could not connect to {url} ({text}); check the URL.")
    if isinstance(error, httpx.RemoteProtocolError):
        return ToolError(f"the server at {url} sent a broken HTTP response ({text}).")
    return ToolError(f"fetching {url} failed ({text}).")


# --- the response --------------------------------------------------------------------


def _render(
    response: httpx.Response, hop: _Hop, max_length: int, clock: _Clock, redirected: bool
) -> str:
    """Status line, final URL when redirected, content type; a blank line; the body."""
    head = [f"HTTP {response.status_code} {response.reason_phrase}".rstrip()]
    if redirected:
        head.append(f"URL: {hop.url}")
    content_type = response.headers.get("content-type", "")
    if content_type:
        head.append(f"Content-Type: {content_type}")
    cap = min(max(4 * max_length, MIN_BYTE_CAP), MAX_BYTE_CAP)
    data, complete = _read_body(response, cap, clock, hop.url)
    charset = response.charset_encoding
    return "\n".join(head) + "\n\n" + _body_text(data, complete, content_type, charset, max_length)


def _read_body(response: httpx.Response, cap: int, clock: _Clock, url: str) -> tuple[bytes, bool]:
    """At most `cap` inflated bytes, and whether that is the whole body."""
    inflater = _Inflater(response.headers.get("content-encoding", ""), url)
    chunks: list[bytes] = []
    size = 0
    for raw in response.iter_raw():
        clock.check(url, size)
        data = inflater.feed(raw, cap - size + 1)
        chunks.append(data)
        size += len(data)
        if size > cap:
            return b"".join(chunks)[:cap], False
    return b"".join(chunks), True


class _Inflater:
    """gzip/deflate decoding that never produces more than it is asked for."""

    def __init__(self, encoding: str, url: str) -> None:
        self._encoding = encoding.strip().lower()
        self._url = url
        self._fallback = self._encoding == "deflate"
        if self._encoding in ("", "identity"):
            self._zlib = None
        elif self._encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self._encoding == "deflate":
            self._zlib = zlib.decompressobj()
        else:
            raise ToolError(
                f"{url} answered with Content-Encoding {encoding!r}, which web_fetch cannot decode."
            )

    def feed(self, data: bytes, limit: int) -> bytes:
        if self._zlib is None:
            return data
        try:
            out = self._zlib.decompress(data, limit)
        except zlib.error:
            if not self._fallback:
                raise ToolError(f"the {self._encoding} body from {self._url} is corrupt.") from None
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, no zlib header
            out = self._zlib.decompress(data, limit)
        self._fallback = False
        return out


def _body_text(
    data: bytes, complete: bool, content_type: str, charset: str | None, max_length: int
) -> str:
    mime = content_type.split(";")[0].strip().lower()
    if not data:
        return "(empty body)"
    if _is_binary(mime, data):
        size = f"{len(data)} bytes" if complete else f"more than {len(data)} bytes"
        return f"[binary content ({mime or 'no content type'}), {size}; web_fetch shows text only]"
    text = data.decode(_codec(charset), errors="replace")
    if complete:
        text = _pretty_json(text, mime)
    return _truncate(text, max_length, complete)


def _is_binary(mime: str, data: bytes) -> bool:
    """Text by its content type; without a useful one, by a NUL byte near the start."""
    if mime.startswith("text/") or mime in TEXT_TYPES or mime.endswith(("+json", "+xml")):
        return False
    if mime in ("", "application/octet-stream"):
        return b"\0" in data[:8192]
    return True


def _codec(charset: str | None) -> str:
    try:
        return codecs.lookup(charset or "utf-8").name
    except LookupError:
        return "utf-8"


def _pretty_json(text: str, mime: str) -> str:
    """JSON (declared, or a body that parses as an object or array) indented by 2."""
    declared = mime.endswith("json")
    if not declared and text.lstrip()[:1] not in ("{", "["):
        return text
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def _truncate(text: str, max_length: int, complete: bool) -> str:
    if complete and len(text) <= max_length:
        return text
    total = str(len(text)) if complete else f"more than {len(text)}"
    shown = min(len(text), max_length)
    advice = (
        "raise max_length to read more"
        if len(text) > max_length
        else f"web_fetch reads at most {MAX_BYTE_CAP // (1024 * 1024)} MB of a response"
    )
    return f"{text[:max_length]}\n[truncated: showing {shown} of {total} characters; {advice}]"
