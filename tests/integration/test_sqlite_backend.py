"""agentweb's SQLite backend (`tools_app/sql/sqlite3`) is Django's, with each statement's
rewrite to SQLite's `?` style kept: the same rewrite, and the same rows."""

from __future__ import annotations

import pytest
from django.db import connection, connections
from django.db.backends.sqlite3.base import SQLiteCursorWrapper as DjangosCursor

from tools_app.sql.sqlite3 import base

QUERIES = [
    "SELECT 1",
    "SELECT %s, %s",
    "SELECT * FROM t WHERE a LIKE '%%x%%' AND b = %s",
    "SELECT '%%s' || %s",  # a literal %s, escaped
    "SELECT %s WHERE '100%%' = %s",
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_rewrite_is_djangos(query: str) -> None:
    assert base._qmark(query) == DjangosCursor.convert_query(None, query)  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_the_site_runs_on_it_and_named_parameters_still_work() -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the SQLite backend is only used on SQLite")
    assert isinstance(connections["default"], base.DatabaseWrapper)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s || '%%s', %s", ["a", 2])
        assert cursor.fetchone() == ("a%s", 2)
        cursor.execute("SELECT %(x)s + %(y)s", {"x": 1, "y": 2})
        assert cursor.fetchone() == (3,)
