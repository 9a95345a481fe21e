"""Each claim move names the engine the row named before it (``holder_before``), and an
index over the moves by that engine and time: each engine under a session reads the
moves of its own claims only (docs/design.md §12), not the whole fleet's.

The column is nullable, so adding it rewrites nothing. On PostgreSQL the index is built
concurrently, outside a transaction: a fleet keeps writing events while it is built.
Older events keep a null ``holder_before``, which every engine reads, as before.
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
        ("claims", "0029_fleet_counts"),
    ]

    operations = [
        migrations.AddField(
            model_name="claimevent",
            name="holder_before",
            field=models.CharField(blank=True, max_length=255, null=True),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="claimevent", index=_index())],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
