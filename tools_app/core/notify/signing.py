"""Signatures: agentweb's webhook header, and Slack's request signing.

Webhook: `X-Agentweb-Signature: t=TIMESTAMP,v1=HEX`, where HEX is the HMAC-SHA256 of
`TIMESTAMP.BODY` under the channel's secret (the scheme Stripe and Slack use: the
timestamp is signed too, so a captured request cannot be replayed later).

Slack: `X-Slack-Signature: v0=HEX` over `v0:TIMESTAMP:BODY` with the app's signing
secret, and `X-Slack-Request-Timestamp` within five minutes of now.
"""

from __future__ import annotations

import hashlib
import hmac

from tools_app.core.digits import ascii_int

SIGNATURE_HEADER = "X-Agentweb-Signature"
MAX_AGE_SECONDS = 300


def _hex(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def webhook_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The header's value for this body, sent at `timestamp` (seconds since the epoch)."""
    return f"t={timestamp},v1={_hex(secret, str(timestamp).encode() + b'.' + body)}"


def _same(expected: str, sent: str) -> bool:
    """A constant-time comparison that takes any text a header may carry (compare_digest
    raises on a str with non-ASCII characters)."""
    return hmac.compare_digest(expected.encode(), sent.encode("utf-8", "replace"))


def webhook_verify(secret: str, header: str, body: bytes, now: float) -> bool:
    """What a receiver checks: a known scheme, a fresh timestamp, the same HMAC."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    stamp, signature = parts.get("t", ""), parts.get("v1", "")
    seconds = ascii_int(stamp)
    if seconds is None or abs(now - seconds) > MAX_AGE_SECONDS:
        return False
    return _same(_hex(secret, stamp.encode() + b"." + body), signature)


def slack_signature(signing_secret: str, timestamp: str, body: bytes) -> str:
    return "v0=" + _hex(signing_secret, f"v0:{timestamp}:".encode() + body)


def slack_verify(
    signing_secret: str, timestamp: str, signature: str, body: bytes, now: float
) -> str:
    """Why a Slack request is refused ("" when it is genuine and fresh)."""
    if not signing_secret:
        return "this channel has no signing secret"
    seconds = ascii_int(timestamp)
    if seconds is None:
        return "no request timestamp (X-Slack-Request-Timestamp: seconds, in ASCII digits)"
    if abs(now - seconds) > MAX_AGE_SECONDS:
        return "the request is stale (its timestamp is more than five minutes off)"
    if not _same(slack_signature(signing_secret, timestamp, body), signature):
        return "the signature does not match"
    return ""
