"""Whole numbers that someone else typed (a header, a query string, a payload).

`str.isdigit()` holds for '²' and '٣' as well as for '3': `int('²')` then raises, and
`int('٣')` reads a number nobody typed in ASCII; `int()` of more than 4,300 digits raises
too, and a database column takes at most 19. A check of `isdigit()` followed by `int()`
on outside input was a 500 with a traceback; this is the one parse for such text.
"""

from __future__ import annotations

MAX_DIGITS = 18  # every number of 18 digits fits a signed 64-bit column


def ascii_int(text: str, *, max_digits: int = MAX_DIGITS) -> int | None:
    """The number `text` spells in ASCII digits alone, or None (a sign, a space, another
    script's digits, more than `max_digits` digits)."""
    if not text or len(text) > max_digits or not (text.isascii() and text.isdigit()):
        return None
    return int(text)
