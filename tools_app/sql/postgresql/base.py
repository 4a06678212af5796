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

Django's `pool` property takes no other check, so it is Django 5.2's, with `check` and
`reset` set here. `ENGINE` names this package (agentweb/settings.py).
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
    """The pool's `reset`: a connection returned to the pool, idle and working."""
    _given_back[connection] = time.monotonic()


def checked(connection: Any) -> None:
    """The pool's `check`: ping a connection unless it was in use just now (raises when it
    no longer works, and the pool replaces it)."""
    returned = _given_back.get(connection)
    if returned is not None and time.monotonic() - returned < FRESH_SECONDS:
        return
    ConnectionPool.check_connection(connection)


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
            pool = ConnectionPool(
                kwargs=connect_kwargs,
                open=False,  # opened on first use, not at startup
                configure=self._configure_connection,  # type: ignore[attr-defined]
                check=checked if checks else None,
                reset=given_back if checks else None,
                **({} if options is True else options),
            )
            pools.setdefault(self.alias, pool)  # the first of several threads wins
        return pools[self.alias]
