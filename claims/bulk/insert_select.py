"""INSERT ... SELECT through the ORM: the SELECT is one Django compiles, with its
parameters; only the INSERT's own table and column names are written here. The bulk job
copies rows set-based this way (its items at the freeze, its claim events per chunk)
rather than building a model instance per row."""

from __future__ import annotations

from typing import Any, cast

from django.db import connection
from django.db.models import Field, Model, QuerySet


def insert_select(model: type[Model], names: tuple[str, ...], rows: QuerySet[Any]) -> int:
    """Insert the rows of ``rows`` (a values_list of as many columns as ``names``, in that
    order) into ``model``'s table; returns how many were inserted."""
    select_sql, params = rows.query.get_compiler(using=rows.db).as_sql()
    quote = connection.ops.quote_name
    meta = model._meta
    columns = ", ".join(quote(cast(Field, meta.get_field(name)).column) for name in names)
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {quote(meta.db_table)} ({columns}) {select_sql}", params)
        return int(cursor.rowcount)
