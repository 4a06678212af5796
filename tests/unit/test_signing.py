"""Signatures checked on text someone else sent: a refusal, never an exception."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools_app.core.digits import ascii_int
from tools_app.core.notify import signing

NOW = 1_700_000_000
BODY = b"payload=%7B%7D"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("1700000000", 1_700_000_000),
        ("9" * 18, 10**18 - 1),
        ("9" * 19, None),
        ("9" * 5000, None),
        ("\u00b2", None),
        ("\u0661\u0662", None),
        ("\uff11", None),
        ("-1", None),
        ("+1", None),
        (" 1", None),
        ("1_000", None),
        ("", None),
    ],
)
def test_ascii_int_reads_ascii_digits_alone(text: str, expected: int | None) -> None:
    assert ascii_int(text) == expected


def test_a_genuine_slack_request_passes_and_a_superscript_timestamp_is_refused() -> None:
    stamp = str(NOW)
    signature = signing.slack_signature("s3cret", stamp, BODY)
    assert signing.slack_verify("s3cret", stamp, signature, BODY, NOW) == ""
    why = signing.slack_verify("s3cret", "\u00b2", signature, BODY, NOW)
    assert why.startswith("no request timestamp")


def test_a_genuine_webhook_passes_and_a_non_ascii_signature_is_refused() -> None:
    header = signing.webhook_signature("s3cret", NOW, BODY)
    assert signing.webhook_verify("s3cret", header, BODY, NOW)
    assert not signing.webhook_verify("s3cret", f"t={NOW},v1=\u00b2", BODY, NOW)
    assert not signing.webhook_verify("s3cret", "t=\u00b2,v1=00", BODY, NOW)


@given(stamp=st.text(), signature=st.text())
def test_slack_verify_refuses_any_forged_header_with_a_reason(stamp: str, signature: str) -> None:
    assert signing.slack_verify("s3cret", stamp, signature, BODY, NOW) != ""


@given(header=st.text())
def test_webhook_verify_refuses_any_forged_header(header: str) -> None:
    assert signing.webhook_verify("s3cret", header, BODY, NOW) is False
