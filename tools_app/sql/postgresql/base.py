"""Django's PostgreSQL backend, whose pool pings a connection it hands out only when it sat
idle.

With `CONN_HEALTH_CHECKS`, Django gives its psycopg pool `check_connection`, which pings
every connection the pool hands out (an empty query): one more round trip for every
request, and for every hook, whose judging thread takes a connection and gives it back
each time (`ops/judging_threads.py`): one of an allowed hook's eleven. Here a connection
given back less than `FRESH_SECONDS` ago is handed out as it is: it was working then. One
idle for longer may have been cut meanwhile (PostgreSQL restarted, a proxy's idle
timeout), so it is pinged and, if dead, replaced before anyone uses it, as before. A
connection cut within those seconds of its last use fails its next statement: that one
request fails (a hook denies, saying why) and the pool drops the connection.

The time a connection comes back is marked by the pool's `putconn` itself, not by a
`reset` callback: psycopg's pool hands a connection with a `reset` to its worker thread to
be returned, a thread woken and the interpreter lock passed to it for every hook (and the
connection back in the pool only once that thread ran). Without one, `putconn` returns it
at once on the caller's thread, rolling back what was left open as before.

Django's `pool` property takes no other check, so it is Django 5.2's, with `check` set
and the pool's class made here. `ENGINE` names this package (agentweb/settings.py).
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool

FRESH_SECONDS = 2.0

_given_back: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def given_back(connection: Any) -> None:
    """Mark a connection given back to the pool now."""
    _given_back[connection] = time.monotonic()


def checked(connection: Any) -> None:
    """The pool's `check`: ping a connection unless it was in use just now (raises when it
    no longer works, and the pool replaces it)."""
    returned = _given_back.get(connection)
    if returned is not None and time.monotonic() - returned < FRESH_SECONDS:
        return
    ConnectionPool.check_connection(connection)


class _Pool(ConnectionPool):
    """psycopg's pool, marking when each connection comes back (`checked` reads it)."""

    def putconn(self, conn: Any) -> None:
        given_back(conn)
        super().putconn(conn)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> ConnectionPool | None:
        options = self.settings_dict["OPTIONS"].get("pool")
        if self.alias == NO_DB_ALIAS or not options:
            return None
        pools: dict[str, ConnectionPool] = self._connection_pools  # type: ignore[attr-defined]
        if self.alias not in pools:
            if self.settings_dict.get("CONN_MAX_AGE", 0) != 0:
                raise ImproperlyConfigured("Pooling doesn't support persistent connections.")
            connect_kwargs = self.get_connection_params()
            connect_kwargs["autocommit"] = True  # Django sets it per use, as in its own
            checks = self.settings_dict["CONN_HEALTH_CHECKS"]
            pool = (_Pool if checks else ConnectionPool)(
                kwargs=connect_kwargs,
                open=False,  # opened on first use, not at startup
                configure=self._configure_connection,  # type: ignore[attr-defined]
                check=checked if checks else None,
                **({} if options is True else options),
            )
            pools.setdefault(self.alias, pool)  # the first of several threads wins
        return pools[self.alias]
