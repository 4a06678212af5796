"""INSERTs and claiming UPDATEs on the hook's hot path, in SQL written here.

Django's `create`, `bulk_create` and `update` build a query and compile it to SQL on
every use: about 0.4 ms of CPU each, most of what storing an allowed hook's call cost
(BENCHMARKS.md §16), though the statements never change, only their values. Here the
statement is written from the model's own column names, and each value is prepared by
its field as Django prepares it (`pre_save(add=True)` then `get_db_prep_save` for an
insert; `get_db_prep_save` for an update), so what is stored is what Django would store.

The statement text is made once per model, row count and database, and kept. A value
Django's preparation would hand back unchanged (a `str` for a plain `CharField` or
`TextField`, a `bool` for a `BooleanField`, an `int` for a foreign key to an integer key
and, where the backend does not wrap it as psycopg 3 does, for an integer field; None) is
used as it is: a sixth of what storing an allowed hook's call cost was those fields'
`get_db_prep_save`, each returning what it was given.

Not here: signals (no `pre_save`/`post_save` is sent: none is connected to these
models, and `insert_unless_taken`, which stands for `create`, refuses a model with
some), expressions as values (`F()`, `Now()`: the ORM is used for those), and fields
with a placeholder of their own (none on these models).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from django.db import connection
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.models import (
    AutoField,
    BigAutoField,
    BigIntegerField,
    BooleanField,
    CharField,
    Field,
    ForeignKey,
    IntegerField,
    Model,
    PositiveBigIntegerField,
    PositiveIntegerField,
    PositiveSmallIntegerField,
    SmallAutoField,
    SmallIntegerField,
    TextField,
    signals,
)

M = TypeVar("M", bound=Model)

# The exact field classes whose preparation returns a value of this type unchanged
# (`to_python` of a str, `bool()` of a bool, `int()` of an int); a subclass may differ.
_KEPT_AS_GIVEN: dict[type, type] = {CharField: str, TextField: str, BooleanField: bool}
_AUTO_KEYS = (AutoField, BigAutoField, SmallAutoField)  # each validated by the backend only
# Integers as given only where the backend does not adapt them: psycopg 3's wraps each in
# the type of its column (Int2, Int4, Int8).
_INTEGERS = (
    IntegerField, BigIntegerField, SmallIntegerField, PositiveIntegerField,
    PositiveBigIntegerField, PositiveSmallIntegerField,
)  # fmt: skip


def insert(instances: Sequence[M]) -> list[M]:
    """Store new `instances` of one model with one `INSERT … VALUES (…), (…) RETURNING`
    (on PostgreSQL, Django sends several rows as arrays to UNNEST, and psycopg's dumping
    of those arrays was a sixth of an allowed hook's CPU there); each gets its pk."""
    if not instances:
        return []
    sql, params = _insert_sql(instances, on_conflict="")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        pks = [found[0] for found in cursor.fetchall()]
    for instance, pk in zip(instances, pks, strict=True):
        stored(instance, pk)
    return list(instances)


def column_names(model: type[Model]) -> tuple[str, ...]:
    """The columns an INSERT of `model` stores, quoted, in the order of `row_values`: for
    a statement of the caller's own."""
    return _column_names(model, connection.vendor)


@cache
def _column_names(model: type[Model], vendor: str) -> tuple[str, ...]:
    return tuple(connection.ops.quote_name(column.field.column) for column in _columns(model))


def row_values(instances: Sequence[Model]) -> list[Any]:
    """Each row's values as `insert` prepares them, row after row (`column_names`' order)."""
    columns = _columns(type(instances[0]))
    return [
        _prepared(column, _saved_value(column, instance, add=True))
        for instance in instances
        for column in columns
    ]


def insert_unless_taken(instance: Model) -> bool:
    """Store `instance` unless a row already holds one of its unique keys (`ON CONFLICT
    DO NOTHING`): False then, and nothing is written. No savepoint is needed to go on in
    the caller's transaction, where catching an IntegrityError needs one (two more round
    trips on PostgreSQL)."""
    sql, params = unless_taken_sql(instance)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchone()
    if found is None:
        return False
    stored(instance, found[0])
    return True


def unless_taken_sql(instance: Model) -> tuple[str, list[Any]]:
    """`insert_unless_taken`'s statement (`… ON CONFLICT DO NOTHING RETURNING pk`) and
    values, for a caller's statement that holds it (a data-modifying `WITH`); refused
    for a model with save signals, which it skips."""
    _refuse_save_signals(type(instance))
    return _insert_sql([instance], on_conflict=" ON CONFLICT DO NOTHING")


def _refuse_save_signals(sender: type[Model]) -> None:
    if signals.pre_save.has_listeners(sender) or signals.post_save.has_listeners(sender):
        raise RuntimeError(f"{sender.__name__} has save signals, which this insert skips")


def update_if(
    model: type[Model], pk: Any, values: Mapping[str, Any], *, column: str, among: Iterable[Any]
) -> int | None:
    """`UPDATE … SET values WHERE pk = pk AND column IN among`: the rows claimed (0 or 1).
    None when a value is an expression or a model instance, which the ORM must write."""
    allowed = sorted(among)
    if not allowed:
        return 0
    update = update_if_sql(model, pk, values, column=column, among=allowed)
    if update is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute(*update)
        return int(cursor.rowcount)


def update_if_sql(
    model: type[Model], pk: Any, values: Mapping[str, Any], *, column: str,
    among: Iterable[Any], returning: bool = False,
) -> tuple[str, list[Any]] | None:  # fmt: skip
    """`update_if`'s statement and values, for a caller's statement that holds it (a
    data-modifying `WITH`: `returning` the pk of the row it claims); None as there.
    `among` must not be empty."""
    if any(hasattr(v, "resolve_expression") or isinstance(v, Model) for v in values.values()):
        return None
    allowed = sorted(among)  # the same text for the same set
    sql, columns = _update_text(model, tuple(values), column, len(allowed), connection.vendor)
    if returning:
        sql += f" RETURNING {connection.ops.quote_name(_pk_column(model))}"
    params = [_prepared(each, value) for each, value in zip(columns, values.values(), strict=True)]
    return sql, [*params, pk, *allowed]


@cache
def _update_text(
    model: type[Model], names: tuple[str, ...], column: str, count: int, vendor: str
) -> tuple[str, tuple[_Column, ...]]:
    """`UPDATE … SET names WHERE pk = %s AND column IN (count values)`, and the columns
    set (`vendor` keys the cache)."""
    columns = tuple(_column_of(_field(model, name), vendor) for name in names)
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(each.field.column)} = %s" for each in columns)
    listed = ", ".join(["%s"] * count)
    # Only quoted names from the model are interpolated; the values are parameters.
    sql = (
        f"UPDATE {quote(model._meta.db_table)} SET {sets} "  # noqa: S608
        f"WHERE {quote(_pk_column(model))} = %s AND {quote(_field(model, column).column)} "
        f"IN ({listed})"
    )
    return sql, columns


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or not field.concrete:
        raise ValueError(f"{model.__name__}.{name} is not a column")
    return field


def _pk_column(model: type[Model]) -> str:
    pk = model._meta.pk
    assert pk is not None
    return str(pk.column)


def _insert_sql(instances: Sequence[Model], *, on_conflict: str) -> tuple[str, list[Any]]:
    model = type(instances[0])
    sql = _insert_text(model, len(instances), on_conflict, connection.vendor)
    return sql, row_values(instances)


@dataclass(frozen=True)
class _Column:
    """A field as an INSERT or UPDATE stores it."""

    field: Field[Any, Any]
    kept: type | None  # values of this exact type (and None) are stored as given
    plain_read: bool  # `pre_save` is Field's own: the attribute as it is


@cache
def _column_of(field: Field[Any, Any], vendor: str) -> _Column:
    """`field` as this database's backend prepares it (`vendor` keys the cache)."""
    target = field.target_field if type(field) is ForeignKey else field
    kind, ops = type(target), type(connection.ops)
    kept = _KEPT_AS_GIVEN.get(kind)
    if kind in _AUTO_KEYS and _base(ops, "validate_autopk_value"):
        kept = int
    if kind in _INTEGERS and _base(ops, "adapt_integerfield_value"):
        kept = int
    return _Column(field, kept, type(field).pre_save is Field.pre_save)


def _base(ops: type, method: str) -> bool:
    """The backend's `method` is Django's base one, which returns the value as it is."""
    return getattr(ops, method) is getattr(BaseDatabaseOperations, method)


def _columns(model: type[Model]) -> tuple[_Column, ...]:
    return _columns_of(model, connection.vendor)


@cache
def _columns_of(model: type[Model], vendor: str) -> tuple[_Column, ...]:
    meta = model._meta
    fields = [field for field in meta.local_concrete_fields if field is not meta.auto_field]
    return tuple(_column_of(field, vendor) for field in fields)


@cache
def _insert_text(model: type[Model], count: int, on_conflict: str, vendor: str) -> str:
    """`INSERT … VALUES (…), (…) … RETURNING pk` of `count` rows of `model` (`vendor` keys
    the cache: each database quotes names its own way)."""
    columns = _column_names(model, vendor)
    quote = connection.ops.quote_name
    names = ", ".join(columns)
    row = "(" + ", ".join(["%s"] * len(columns)) + ")"
    rows = ", ".join([row] * count)
    # Only quoted names from the model are interpolated; the values are parameters.
    return (
        f"INSERT INTO {quote(model._meta.db_table)} ({names}) VALUES {rows}{on_conflict} "  # noqa: S608
        f"RETURNING {quote(_pk_column(model))}"
    )


def _saved_value(column: _Column, instance: Model, *, add: bool) -> Any:
    if column.plain_read:
        return getattr(instance, column.field.attname)
    return column.field.pre_save(instance, add)


def _prepared(column: _Column, value: Any) -> Any:
    """What Django's `get_db_prep_save` gives for `value`, without asking it when that is
    the value itself."""
    if column.kept is not None and (value is None or type(value) is column.kept):
        return value
    return column.field.get_db_prep_save(value, connection)


def stored(instance: Model, pk: Any) -> None:
    """`instance` now is the row with primary key `pk` (after an INSERT, here or a caller's
    own)."""
    instance.pk = pk
    instance._state.adding, instance._state.db = False, connection.alias
