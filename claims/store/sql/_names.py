"""What every statement module of the room shares: names from ``_meta``, the dialect pick,
and statements whose text grows with the rows they carry."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, models

POSTGRESQL = "postgresql"


def table(model: type[models.Model]) -> str:
    """The model's table, quoted for the default database."""
    return str(connection.ops.quote_name(model._meta.db_table))


def column(model: type[models.Model], name: str) -> str:
    """The column of the model's field ``name``, quoted for the default database."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    return str(connection.ops.quote_name(field.column))


def columns(model: type[models.Model], names: tuple[str, ...]) -> list[str]:
    return [column(model, name) for name in names]


def insert_unless_present(model: type[models.Model], names: tuple[str, ...]) -> str:
    """INSERT of one row unless its key is taken (PostgreSQL and SQLite agree on this
    text): the row count says whether this one was written. Parameters: ``names``."""
    values = ", ".join(["%s"] * len(names))
    return (
        f"INSERT INTO {table(model)} ({', '.join(columns(model, names))}) VALUES ({values}) "
        "ON CONFLICT DO NOTHING"
    )


def dialect(vendor: str, *, postgresql: str, sqlite: str) -> str:
    """One statement of a named pair: the PostgreSQL text on PostgreSQL, else SQLite's."""
    return postgresql if vendor == POSTGRESQL else sqlite


@dataclass(frozen=True)
class RowsStatement:
    """A statement with one repeated piece per row it carries (a VALUES list, an IN list):
    ``head``, then ``row`` once per row joined by commas, then ``tail``."""

    head: str
    row: str
    tail: str

    def for_rows(self, count: int) -> str:
        return self.head + ", ".join([self.row] * count) + self.tail
