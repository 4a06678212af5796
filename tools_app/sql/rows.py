"""INSERTs and claiming UPDATEs on the hook's hot path, in SQL written here.

Django's `create`, `bulk_create` and `update` build a query and compile it to SQL on
every use: about 0.4 ms of CPU each, most of what storing an allowed hook's call cost
(BENCHMARKS.md §16), though the statements never change, only their values. Here the
statement is written from the model's own column names, and each value is prepared by
its field as Django prepares it (`pre_save(add=True)` then `get_db_prep_save` for an
insert; `get_db_prep_save` for an update), so what is stored is what Django would store.

Not here: signals (no `pre_save`/`post_save` is sent: none is connected to these
models, and `insert_unless_taken`, which stands for `create`, refuses a model with
some), expressions as values (`F()`, `Now()`: the ORM is used for those), and fields
with a placeholder of their own (none on these models).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Field, Model, signals

M = TypeVar("M", bound=Model)


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
        _stored(instance, pk)
    return list(instances)


def insert_unless_taken(instance: Model) -> bool:
    """Store `instance` unless a row already holds one of its unique keys (`ON CONFLICT
    DO NOTHING`): False then, and nothing is written. No savepoint is needed to go on in
    the caller's transaction, where catching an IntegrityError needs one (two more round
    trips on PostgreSQL)."""
    sender = type(instance)
    if signals.pre_save.has_listeners(sender) or signals.post_save.has_listeners(sender):
        raise RuntimeError(f"{sender.__name__} has save signals, which this insert skips")
    sql, params = _insert_sql([instance], on_conflict=" ON CONFLICT DO NOTHING")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = cursor.fetchone()
    if found is None:
        return False
    _stored(instance, found[0])
    return True


def update_if(
    model: type[Model], pk: Any, values: Mapping[str, Any], *, column: str, among: Iterable[Any]
) -> int | None:
    """`UPDATE … SET values WHERE pk = pk AND column IN among`: the rows claimed (0 or 1).
    None when a value is an expression or a model instance, which the ORM must write."""
    if any(hasattr(v, "resolve_expression") or isinstance(v, Model) for v in values.values()):
        return None
    allowed = sorted(among)  # the same text for the same set
    if not allowed:
        return 0
    fields = [_field(model, name) for name in values]
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(field.column)} = %s" for field in fields)
    listed = ", ".join(["%s"] * len(allowed))
    # Only quoted names from the model are interpolated; the values are parameters.
    sql = (
        f"UPDATE {quote(model._meta.db_table)} SET {sets} "  # noqa: S608
        f"WHERE {quote(_pk_column(model))} = %s AND {quote(_field(model, column).column)} "
        f"IN ({listed})"
    )
    params = [
        field.get_db_prep_save(value, connection)
        for field, value in zip(fields, values.values(), strict=True)
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, pk, *allowed])
        return int(cursor.rowcount)


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
    meta = instances[0]._meta
    fields = [field for field in meta.local_concrete_fields if field is not meta.auto_field]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(field.column) for field in fields)
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    rows = ", ".join([row] * len(instances))
    # Only quoted names from the model are interpolated; the values are parameters.
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES {rows}{on_conflict} "  # noqa: S608
        f"RETURNING {quote(_pk_column(type(instances[0])))}"
    )
    params = [
        field.get_db_prep_save(field.pre_save(instance, True), connection)
        for instance in instances
        for field in fields
    ]
    return sql, params


def _stored(instance: Model, pk: Any) -> None:
    instance.pk = pk
    instance._state.adding, instance._state.db = False, connection.alias
