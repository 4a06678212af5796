"""Which skills a task activates: a trigger matches as a whole word or phrase.

Case does not matter and neither does punctuation between or around the words: the
trigger `code review` matches "Code-review this", `ship` matches "Ship it!" but not
"relationship" or "shipping".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Activation:
    """A skill the task activates, with the triggers that matched (as the author wrote them)."""

    skill: str
    words: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        return {"skill": self.skill, "words": list(self.words)}


@lru_cache(maxsize=4096)
def trigger_pattern(trigger: str) -> re.Pattern[str] | None:
    """The trigger's words joined by any run of non-letters; None for a trigger without
    a single letter or digit (it can never match)."""
    words = _WORD.findall(trigger.casefold())
    if not words:
        return None
    body = r"[\W_]+".join(re.escape(word) for word in words)
    return re.compile(rf"(?<![^\W_]){body}(?![^\W_])")


def matched_triggers(triggers: Iterable[str], text: str) -> tuple[str, ...]:
    """The triggers that occur in `text` as whole words or phrases, in their order."""
    folded = text.casefold()
    found: list[str] = []
    for trigger in triggers:
        pattern = trigger_pattern(trigger)
        if pattern is not None and pattern.search(folded) and trigger not in found:
            found.append(trigger)
    return tuple(found)


def activations(skills: Iterable[tuple[str, Sequence[str]]], text: str) -> list[Activation]:
    """The skills (name, triggers) that `text` activates, in the order given."""
    result = []
    for name, triggers in skills:
        words = matched_triggers(triggers, text)
        if words:
            result.append(Activation(name, words))
    return result
