"""Cancel a backfill whose run time lies past year 9999 in UTC.

Before the time rule (claims/protocol/times.py) a run time such as
``9999-12-31T23:59:59-14:00`` was stored on PostgreSQL as ``10000-01-01 13:59:59+00``: a
timestamp the database holds but no reader can return, so every page and call that read
the job answered 500, and as the one active job it refused every new schedule. Such a job
is cancelled here, its run time set to the last instant that can be read, and its error
says why. SQLite never stored one (its write failed), so only PostgreSQL is touched.
"""

from django.db import migrations

TABLE = "claims_backfilljob"
LAST_READABLE = "9999-12-31 23:59:59.999999+00"
REPAIR = f"""
UPDATE {TABLE}
   SET status = 'cancelled',
       run_at = '{LAST_READABLE}',
       error = 'cancelled by migration 0020: its run time lay past year 9999 in UTC'
 WHERE run_at > '{LAST_READABLE}'
"""


def cancel_unreadable_runs(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(REPAIR)


class Migration(migrations.Migration):
    dependencies = [("claims", "0019_claim_id_search")]

    operations = [migrations.RunPython(cancel_unreadable_runs, migrations.RunPython.noop)]
