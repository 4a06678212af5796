"""Django's SQLite backend, with each statement's conversion to SQLite's `?` style
remembered.

SQLite takes `?` where Django writes `%s`, so Django's SQLite cursor rewrites every
statement with a regular expression before running it, every time, though most
statements are the same text again and again (the hook's prepared lookups and inserts,
`sql/prepared.py`, `sql/rows.py`): 6% of an allowed hook's Django work (BENCHMARKS.md
§16). Here the rewrite of a text is kept (the last `CONVERTED_KEPT` texts) and reused.
Everything else is Django's backend, unchanged; `ENGINE` names this package.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db.backends.sqlite3 import base

CONVERTED_KEPT = 2048  # statement texts; a few MB at most


@lru_cache(maxsize=CONVERTED_KEPT)
def _qmark(query: str) -> str:
    """Django's "format" to "qmark" rewrite (`SQLiteCursorWrapper.convert_query`)."""
    return str(base.FORMAT_QMARK_REGEX.sub("?", query)).replace("%%", "%")


class SQLiteCursorWrapper(base.SQLiteCursorWrapper):
    def convert_query(self, query: str, *, param_names: Any = None) -> str:
        if param_names is None:
            return _qmark(query)
        converted = super().convert_query(query, param_names=param_names)  # type: ignore[misc]
        return str(converted)


class DatabaseWrapper(base.DatabaseWrapper):
    def create_cursor(self, name: Any = None) -> Any:
        return self.connection.cursor(factory=SQLiteCursorWrapper)
