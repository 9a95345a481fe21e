"""A partial index of the claim moves an engine under a session reads every reclaim pass
(rotations, forced releases and forced takeovers; docs/design.md §12): the read no longer
walks every event of the last TTL, a mass failover's takeovers included.

On PostgreSQL the index is built concurrently, outside a transaction: the event log is
the largest table, and a plain build would hold every claim transition for its length.
SQLite builds it as Django does.
"""

from django.db import migrations, models
from django.db.models import Q

TABLE = "claims_claimevent"
NAME = "claim_event_move_idx"
KINDS = ["forced_release", "forced_takeover", "rotated"]


def _index():
    return models.Index(
        fields=["at_ms"],
        condition=Q(kind__in=KINDS, epoch_after__isnull=False),
        name=NAME,
    )


def forwards(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        kinds = ", ".join(f"'{kind}'" for kind in KINDS)
        with connection.cursor() as cursor:
            cursor.execute(
                f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {NAME} ON {TABLE} (at_ms) "
                f"WHERE kind IN ({kinds}) AND epoch_after IS NOT NULL"
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
        ("claims", "0028_claim_granted_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AddIndex(model_name="claimevent", index=_index())],
            database_operations=[migrations.RunPython(forwards, backwards)],
        ),
    ]
