"""Turning an SDK's exception into a ProviderError a person can read and nobody can misuse.

The message names the spec, the HTTP status and the provider's own words; any key given
to the provider is cut out of it, and the SDK exception (whose request carries the key in
a header) is not chained, so a logged traceback cannot show it either.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from tools_app.runtime.conversation import ProviderError

MAX_MESSAGE = 600
REDACTED = "[redacted]"


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret (four characters or more) replaced."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def safe_error(message: str, secrets: Iterable[str]) -> ProviderError:
    text = " ".join(redact(message, secrets).split())
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    return ProviderError(text)


def body_message(body: object) -> str:
    """The provider's words from an error body: `{"error": {"message": ...}}` and variants."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            message = inner.get("message") or inner.get("detail") or inner.get("type")
            return str(message) if message else str(dict(inner))
        return str(inner)
    if body is None:
        return ""
    return str(body)


def status_text(spec: str, status: int, body: object, attempts: int) -> str:
    kind = "rate limited" if status == 429 else "server error" if status >= 500 else "refused"
    tried = f" after {attempts} attempts" if attempts > 1 and retriable(status) else ""
    detail = body_message(body) or "(no message)"
    return f"{spec}: HTTP {status} ({kind}){tried}: {detail}"


def retriable(status: int) -> bool:
    """What the SDKs retry on their own (408, 409, 429, 5xx)."""
    return status in (408, 409, 429) or status >= 500


def timeout_text(spec: str, timeout: float, attempts: int) -> str:
    tries = f" ({attempts} attempts)" if attempts > 1 else ""
    return f"{spec}: no answer within {timeout:g} s{tries}"


def connection_text(spec: str, base_url: str, cause: BaseException | None) -> str:
    reason = f": {cause}" if cause is not None else ""
    return f"{spec}: cannot reach {public_url(base_url)}{reason}"


def public_url(url: str) -> str:
    """A URL without any user:password part, fit for a message."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
