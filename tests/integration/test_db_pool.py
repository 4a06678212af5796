"""agentweb's PostgreSQL backend (`tools_app/sql/postgresql`): its pool pings a connection
it hands out only when it sat idle. No extra round trip on a busy process's every request
or hook, and a connection cut while idle is still replaced before anyone uses it."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection, connections
from psycopg_pool import ConnectionPool

from agentweb import settings
from tools_app.sql.postgresql import base

POSTGRES = os.environ.get("AGENTWEB_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432")
URL = f"{POSTGRES}/test"


@pytest.fixture
def admin() -> Iterator[psycopg.Connection]:
    try:
        opened = psycopg.connect(URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"needs PostgreSQL at {URL}: {exc}")
    with opened:
        yield opened


def cut(admin: psycopg.Connection, pid: int) -> None:
    """End a backend as a restart or an idle timeout would, and wait until it is gone."""
    admin.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 10
    while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
        assert time.monotonic() < deadline, "the backend did not end"
        time.sleep(0.05)


def test_a_connection_given_back_just_now_is_not_pinged(
    admin: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    with psycopg.connect(URL, autocommit=True) as used:
        base.given_back(used)
        cut(admin, used.info.backend_pid)
        base.checked(used)  # no round trip: the cut is not seen (its next statement fails)
        monkeypatch.setattr(base, "FRESH_SECONDS", 0.0)
        with pytest.raises(psycopg.OperationalError):
            base.checked(used)  # idle longer: pinged, found dead


@pytest.fixture
def pool(admin: psycopg.Connection) -> Iterator[ConnectionPool]:
    """The backend's own pool on the test database, of one connection, opened."""
    database: dict[str, Any] = settings._postgresql(URL) | {"NAME": "test", "TIME_ZONE": None}
    database["OPTIONS"]["pool"] |= {"min_size": 1, "max_size": 1}
    wrapper = base.DatabaseWrapper(database, alias="pool_test")
    pool = wrapper.pool
    assert pool is not None
    try:
        pool.open(wait=True)
        yield pool
    finally:
        pool.close()
        base.DatabaseWrapper._connection_pools.pop("pool_test", None)  # type: ignore[attr-defined]


def test_the_backend_s_pool_replaces_a_connection_cut_while_idle(
    pool: ConnectionPool, admin: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pool.connection() as first:
        pid = first.info.backend_pid
    with pool.connection() as again:  # given back just now: not pinged
        assert again.info.backend_pid == pid
    cut(admin, pid)
    monkeypatch.setattr(base, "FRESH_SECONDS", 0.0)  # as after two idle seconds
    with pool.connection() as second:
        assert second.execute("SELECT 1").fetchone() == (1,)
        assert second.info.backend_pid != pid


def test_a_connection_given_back_is_in_the_pool_at_once_and_marked_fresh(
    pool: ConnectionPool,
) -> None:
    """Returned on the caller's thread, not handed to the pool's worker (as a `reset`
    callback made psycopg's pool do), what was left open rolled back as before."""
    for _ in range(20):  # a worker thread would lose some of these races
        used = pool.getconn()
        used.autocommit = False
        used.execute("SELECT 1")  # a transaction left open
        pool.putconn(used)
        assert pool.get_stats()["pool_available"] == 1
        assert base._given_back.get(used, 0.0) > time.monotonic() - 1
        again = pool.getconn(timeout=0.5)
        assert again is used
        assert again.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        again.autocommit = True
        pool.putconn(again)


def test_a_postgresql_url_is_served_by_this_backend_with_its_pool() -> None:
    database = settings._postgresql("postgres://agentweb@db.internal:5432/agentweb")
    assert database["ENGINE"] == "tools_app.sql.postgresql"
    assert database["CONN_HEALTH_CHECKS"] is True  # the pool's check, made conditional here
    options = database["OPTIONS"]
    assert isinstance(options, dict) and options["pool"]["max_size"] == 10


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_test_database_runs_on_it() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the PostgreSQL backend is only used on PostgreSQL")
    assert isinstance(connections["default"], base.DatabaseWrapper)
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s", [1])
        assert cursor.fetchone() == (1,)
