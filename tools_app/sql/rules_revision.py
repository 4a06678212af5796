"""Whether this database keeps each policy's `rules_revision`: the triggers migration
0027 made on the rules' table, which give the policy a new random revision whenever one
of its rules is written, whatever wrote it. A spec made from a policy's rules is used
again without reading them only while they are there (`selectors/records.py`).

On SQLite, a later migration that remakes the rules' table (Django's way of altering a
column there) drops its triggers with it: then the rules are read on every call, an
error is logged, and `tests/integration/test_rules_revision.py` fails until that
migration makes them again.
"""

from __future__ import annotations

import functools
import logging

from django.db import connection

logger = logging.getLogger(__name__)

TRIGGERS = {
    "sqlite": (
        "agentweb_rules_revision_insert",
        "agentweb_rules_revision_update",
        "agentweb_rules_revision_delete",
    ),
    "postgresql": ("agentweb_rules_revision", "agentweb_rules_truncated"),
}
RULES_TABLE = "tools_app_policyrule"


def kept() -> bool:
    """The triggers are there (and enabled), asked once per process and database."""
    return _kept(connection.alias, connection.settings_dict["NAME"])


@functools.cache
def _kept(alias: str, name: object) -> bool:
    names = TRIGGERS.get(connection.vendor, ())
    found = _found(names) if names else set()
    missing = sorted(set(names) - found)
    if missing or not names:
        logger.error(
            "the policies' rules_revision is not kept on this database (triggers missing: %s): "
            "every call reads its policy's rules (run `manage.py migrate`)",
            ", ".join(missing) or connection.vendor,
        )
    return bool(names) and not missing


def _found(names: tuple[str, ...]) -> set[str]:
    """Which of `names` are triggers on the rules' table (and, on PostgreSQL, enabled)."""
    if connection.vendor == "sqlite":
        sql = "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s"
    else:  # a disabled trigger ('D') keeps nothing
        sql = "SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass(%s) AND tgenabled <> 'D'"
    with connection.cursor() as cursor:
        cursor.execute(sql, [RULES_TABLE])
        return {str(row[0]) for row in cursor.fetchall()} & set(names)


def forget() -> None:
    """Ask again at the next call (a test that drops or makes a trigger)."""
    _kept.cache_clear()
