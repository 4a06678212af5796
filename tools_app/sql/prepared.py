"""SELECTs on the hook's hot path, made into SQL by Django once per process.

Building a queryset and compiling it to SQL costs about 0.3 ms of CPU each time, while
running that SQL on SQLite costs 0.03 ms: the ORM making its statements was over 40% of
an allowed hook's Django work (BENCHMARKS.md §16), though the SQL of the token, session,
calls and rules lookups never changes, only the values in it. A `Prepared` builds its
queryset once, with a stand-in for each value, and keeps Django's SQL, where each
stand-in sits among the parameters, the converters of its columns and how Django makes
its models from a row (`select_related` included). Each use runs that SQL with the real
values and makes the models as Django's `ModelIterable` does.

Values are given as the database stores them (a string, an int): no field's
`get_prep_value` runs on them, so they are for fields that store what they are given.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections, router
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators  # type: ignore[attr-defined]

M = TypeVar("M", bound=Model)


class Stand:
    """A stand-in for a value in the queryset built once: a string or an int no real
    value or constant of the query is."""

    def __init__(self, name: str, kind: type) -> None:
        self.name = name
        self.value: Any = f"\x00{name}\x00" if kind is str else -(10**15) - len(name)


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]  # constants, and the names (Stand) of the values to put in
    converters: dict[int, tuple[list[Any], Any]]
    make: Callable[[tuple[Any, ...]], Any] | None  # a row to its model; None: the row itself


class Prepared(Generic[M]):
    """`build(**stand_ins)`, a queryset of `model`, compiled once per database alias;
    `.models(**values)` or `.rows(**values)` run it. `values`: each name and its type
    (str or int)."""

    def __init__(self, model: type[M], build: Callable[..., QuerySet[M]], **values: type) -> None:
        self.model, self.build = model, build
        self.stands = {name: Stand(name, kind) for name, kind in values.items()}
        self._compiled: dict[str, _Compiled] = {}
        self._lock = threading.Lock()

    def models(self, **values: Any) -> list[M]:
        found: list[M] = self._run(values)
        return found

    def rows(self, **values: Any) -> list[tuple[Any, ...]]:
        found: list[tuple[Any, ...]] = self._run(values)
        return found

    def _run(self, values: dict[str, Any]) -> list[Any]:
        if values.keys() != self.stands.keys():
            raise TypeError(f"values for {sorted(self.stands)} expected, not {sorted(values)}")
        db = router.db_for_read(self.model)
        compiled = self._compiled.get(db) or self._compile(db)
        params = [values[p.name] if isinstance(p, Stand) else p for p in compiled.params]
        connection = connections[db]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            found = cursor.fetchall()
        rows = [_converted(row, compiled.converters, connection) for row in found]
        return rows if compiled.make is None else [compiled.make(row) for row in rows]

    def _compile(self, db: str) -> _Compiled:
        with self._lock:
            queryset = self.build(**{name: stand.value for name, stand in self.stands.items()})
            compiler = queryset.query.get_compiler(using=db)
            sql, params = compiler.as_sql()  # fills compiler.select and klass_info
            by_value = {stand.value: stand for stand in self.stands.values()}
            placed = tuple(by_value.get(p, p) if isinstance(p, str | int) else p for p in params)
            missing = set(self.stands.values()) - {p for p in placed if isinstance(p, Stand)}
            if missing:
                names = sorted(stand.name for stand in missing)
                raise ValueError(f"the query's parameters do not hold the values {names}")
            fields = [column[0] for column in compiler.select[: compiler.col_count]]
            make = _maker(queryset, compiler, db)
            compiled = _Compiled(sql, placed, compiler.get_converters(fields), make)
            self._compiled[db] = compiled
            return compiled


def _maker(
    queryset: QuerySet[Any], compiler: Any, db: str
) -> Callable[[tuple[Any, ...]], Any] | None:
    """How Django's ModelIterable makes a model (and its select_related) from a row, its
    annotations set as attributes."""
    klass_info = compiler.klass_info
    if queryset._iterable_class is not ModelIterable or klass_info is None:
        return None  # values_list: rows as they are
    model = klass_info["model"]
    start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
    names = [column[0].target.attname for column in compiler.select[start:end]]
    related = get_related_populators(klass_info, compiler.select, db)
    annotations = tuple(compiler.annotation_col_map.items())

    def make(row: tuple[Any, ...]) -> Any:
        instance = model.from_db(db, names, row[start:end])
        for populator in related:
            populator.populate(row, instance)
        for name, position in annotations:
            setattr(instance, name, row[position])
        return instance

    return make


def _converted(
    row: tuple[Any, ...], converters: dict[int, Any], connection: Any
) -> tuple[Any, ...]:
    """The row with each column's database converters applied (SQLite's dates, JSON…),
    as the compiler's `apply_converters`, with this thread's connection."""
    if not converters:
        return row
    values = list(row)
    for position, (functions, expression) in converters.items():
        value = values[position]
        for function in functions:
            value = function(value, expression, connection)
        values[position] = value
    return tuple(values)
