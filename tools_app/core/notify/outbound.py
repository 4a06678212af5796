"""The one way a notification leaves: a POST through web_fetch's SSRF guard.

The channel's host must be on the allow list (AGENTWEB_NOTIFY_HOSTS): it is resolved
once, every address checked, and the connection pinned to the checked address; no
redirect is followed, no proxy or certificate comes from the environment. Being on the
list does not make a private address reachable: only a host also named in
AGENTWEB_NOTIFY_PRIVATE_HOSTS may resolve to one (a chat server on the office network).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv6Address
from urllib.parse import urlsplit

import httpx

from tools_app.core.tools import netguard

TIMEOUT_SECONDS = 10.0
MAX_ANSWER_BYTES = 64 * 1024
USER_AGENT = "agentweb-notify/1"
PRIVATE_HINT = (
    "notifications reach only public addresses unless AGENTWEB_NOTIFY_PRIVATE_HOSTS names the host"
)


@dataclass(frozen=True)
class Answer:
    code: int  # the HTTP status
    body: str


class SendFailed(Exception):
    """Not delivered; `retry` when trying later may help (a timeout, a 5xx, a 429)."""

    def __init__(self, message: str, *, retry: bool, code: int | None = None) -> None:
        super().__init__(message)
        self.retry = retry
        self.code = code


def url_problem(url: str, allow_hosts: Sequence[str], private_hosts: Sequence[str] = ()) -> str:
    """Why a channel may not send to `url` ("" when it may). A host name's addresses are
    checked when a message is sent; an IP address is checked here already."""
    try:
        target = netguard.parse_target(url)
    except ValueError as error:
        return str(error)
    if not netguard.host_allowed(target, allow_hosts):
        return (
            f"{target.host} is not an allowed notification host; add it to "
            "AGENTWEB_NOTIFY_HOSTS (comma-separated) to send there"
        )
    literal = [target.ip] if target.ip is not None else []
    return _address_refusal(target, literal, private_hosts) or ""


def _address_refusal(
    target: netguard.Target, addresses: Sequence[netguard.IPAddress], private_hosts: Sequence[str]
) -> str | None:
    if netguard.host_allowed(target, private_hosts):
        return None
    return netguard.address_refusal(target, addresses, PRIVATE_HINT)


def post(
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    allow_hosts: Sequence[str],
    *,
    private_hosts: Sequence[str] = (),
    timeout: float = TIMEOUT_SECONDS,
) -> Answer:
    """POST `body`; the answer when the server took it (2xx), else SendFailed."""
    problem = url_problem(url, allow_hosts, private_hosts)
    if problem:
        raise SendFailed(problem, retry=False)
    target = netguard.parse_target(url)
    try:
        addresses = netguard.resolve(target)
    except (OSError, UnicodeError) as error:
        raise SendFailed(f"cannot resolve {target.host}: {error}", retry=True) from None
    refused = _address_refusal(target, addresses, private_hosts)
    if refused:
        raise SendFailed(refused, retry=False)
    return _send(url, target, addresses[0], body, headers, timeout)


def _send(
    url: str,
    target: netguard.Target,
    ip: netguard.IPAddress,
    body: bytes,
    headers: Mapping[str, str],
    timeout: float,
) -> Answer:
    parts = urlsplit(url)
    host = f"[{ip}]" if isinstance(ip, IPv6Address) else str(ip)
    query = f"?{parts.query}" if parts.query else ""
    pinned = f"{target.scheme}://{host}:{target.port}{parts.path or '/'}{query}"
    sni = {"sni_hostname": target.host} if target.scheme == "https" and target.ip is None else {}
    sent = {"User-Agent": USER_AGENT, **headers, "Host": target.authority}
    with httpx.Client(trust_env=False, follow_redirects=False, timeout=timeout) as client:
        request = client.build_request("POST", pinned, headers=sent, content=body, extensions=sni)
        try:
            response = client.send(request)
        except httpx.TimeoutException:
            raise SendFailed(f"timed out after {timeout:g} s", retry=True) from None
        except httpx.HTTPError as error:
            raise SendFailed(f"could not reach {target.authority}: {error}", retry=True) from None
    text = response.content[:MAX_ANSWER_BYTES].decode("utf-8", "replace")
    if 200 <= response.status_code < 300:
        return Answer(response.status_code, text)
    retry = response.status_code >= 500 or response.status_code == 429
    raise SendFailed(
        f"HTTP {response.status_code}: {text[:300]}", retry=retry, code=response.status_code
    )
