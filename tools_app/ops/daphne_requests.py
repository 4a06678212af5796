"""daphne's requests without twisted's own parse of a POST form.

daphne hands Django the raw body, and Django parses a form itself. twisted's `Request`
parses one first anyway, into `args` that daphne never reads: on every POST it parses the
Content-Type through the `email` package's header machinery (a tenth of the event loop's
work on each hook, BENCHMARKS.md §16), and it reads a whole urlencoded body, or a whole
multipart upload, a second time (refusing a multipart body it cannot parse before Django
sees it). twisted has the switch (`parsePOSTFormSubmission`); daphne does not pass it.
"""

from __future__ import annotations

import inspect
from typing import Any

from daphne.http_protocol import WebRequest
from twisted.web import http

_MARK = "_agentweb_no_form_parse"


def skip_twisted_form_parse() -> None:
    """daphne's requests are made with twisted's form parse off (once per process)."""
    made = WebRequest.__init__
    if getattr(made, _MARK, False) or not _has_the_switch():
        return

    def __init__(self: WebRequest, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("parsePOSTFormSubmission", False)
        made(self, *args, **kwargs)

    setattr(__init__, _MARK, True)
    WebRequest.__init__ = __init__


def _has_the_switch() -> bool:
    """Whether this twisted has it (one without parses, as before)."""
    return "parsePOSTFormSubmission" in inspect.signature(http.Request.__init__).parameters
