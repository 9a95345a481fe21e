"""The moves by the engine they were taken from and time (``claim_event_moved_from_idx``):
an engine's read of the moves of its own claims goes along it (docs/design.md §12).

On PostgreSQL the index is built concurrently, outside a transaction: a fleet keeps
writing events while it is built. A build that failed or was cancelled leaves an invalid
index of the same name behind, which ``IF NOT EXISTS`` would keep: it is dropped first,
so running the migration again builds it afresh.
"""

from django.db import migrations, models
from django.db.models import Q

TABLE = "claims_claimevent"
NAME = "claim_event_moved_from_idx"
FIELDS = ["holder_before", "at_ms"]
KINDS = ["forced_release", "forced_takeover", "rotated", "takeover"]


def _index() -> models.Index:
    return models.Index(fields=FIELDS, condition=Q(kind__in=KINDS), name=NAME)


def forwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        kinds = ", ".join(f"'{kind}'" for kind in KINDS)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
                " WHERE c.relname = %s AND NOT i.indisvalid",
                [NAME],
            )
            if cursor.fetchone() is not None:
                cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}")
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {NAME} ON {TABLE} "
                f"({', '.join(FIELDS)}) WHERE kind IN ({kinds})"
            )
        return
    schema_editor.add_index(apps.get_model("claims", "ClaimEvent"), _index())


def backwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {NAME}")
        return
    schema_editor.remove_index(apps.get_model("claims", "ClaimEvent"), _index())


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("claims", "0030_claim_event_holder_before"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="claimevent", index=_index())],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
