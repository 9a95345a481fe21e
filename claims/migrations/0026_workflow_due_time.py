"""Workflow.due_at_ms: when a running workflow's next drive is due, kept beside its state
so the wake passes find what is due through an index (claims.models.parks).

The backfill reads each running workflow's park in SQL, the same rule as
``claims.models.parks.park_wake_at``: an integer ``state.park.wake_at_ms`` clamped to
[0, MAX_TIME_MS], anything else 0 (due at once), for every workflow whatever its status: a
resume writes the status alone, so a workflow suspended mid-sleep keeps the park's time."""

from django.db import migrations, models

from claims.protocol.times import MAX_TIME_MS

# jsonb keeps every JSON number as numeric: only an integer's text is all digits (and one
# of at most 18 fits a bigint whatever its digits; a longer one is past MAX_TIME_MS).
POSTGRESQL_BACKFILL = f"""
UPDATE claims_workflow
SET due_at_ms = CASE
    WHEN length(ltrim(state->'park'->>'wake_at_ms', '-')) > 18
        THEN CASE WHEN left(state->'park'->>'wake_at_ms', 1) = '-' THEN 0 ELSE {MAX_TIME_MS} END
    ELSE LEAST(GREATEST((state->'park'->>'wake_at_ms')::bigint, 0), {MAX_TIME_MS})
END
WHERE jsonb_typeof(state->'park'->'wake_at_ms') = 'number'
  AND (state->'park'->>'wake_at_ms') ~ '^-?[0-9]+$'
"""

# SQLite's JSON1 says 'integer' of an integer of any length (one past 64 bits reads as a
# real, which the clamp brings to MAX_TIME_MS as the rule does) and 'real' of a fraction.
SQLITE_BACKFILL = f"""
UPDATE claims_workflow
SET due_at_ms = MIN(MAX(json_extract(state, '$.park.wake_at_ms'), 0), {MAX_TIME_MS})
WHERE json_valid(state)
  AND json_type(state, '$.park.wake_at_ms') = 'integer'
"""


def backfill_due_times(apps, schema_editor):
    connection = schema_editor.connection
    if connection.vendor == "postgresql":
        sql = POSTGRESQL_BACKFILL
    elif connection.vendor == "sqlite":
        sql = SQLITE_BACKFILL
    else:
        raise NotImplementedError(f"no due-time backfill for {connection.vendor}")
    with connection.cursor() as cursor:
        cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0025_bulk_item_job_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="workflow",
            name="due_at_ms",
            field=models.BigIntegerField(db_default=0, default=0),
        ),
        migrations.RunPython(backfill_due_times, migrations.RunPython.noop, elidable=True),
        migrations.AddIndex(
            model_name="workflow",
            index=models.Index(
                condition=models.Q(("status", "running")),
                fields=["due_at_ms", "workflow_id"],
                name="workflow_due_idx",
            ),
        ),
    ]
