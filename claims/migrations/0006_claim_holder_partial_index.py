from django.db import migrations

# Only the claim rows that carry any holder column: the reclaim pass's stale-holder
# query and its unheld-running anti-join read this index, so their cost follows the
# held rows instead of every workflow id ever claimed. The predicate is the same
# disjunction the queries filter on (HOLDER_PRESENT in claims.store.claim_sets), which is
# what lets PostgreSQL and SQLite prove the partial index applies.
# It names holder_expires_at_ms, so a renewal is no longer a heap-only (HOT) update on
# PostgreSQL: it also writes index entries. Finding stale holders without a full scan
# needs that column's nullness in some index, and a torn holder with only an expiry
# left is still one the reclaim pass has to find.
HELD_INDEX = "workflow_claim_held_idx"

CREATE = (
    f"CREATE INDEX {HELD_INDEX} ON claims_workflowclaim (workflow_id) "
    "WHERE holder_engine_id IS NOT NULL OR holder_epoch IS NOT NULL "
    "OR holder_expires_at_ms IS NOT NULL OR holder_claimed_at_ms IS NOT NULL"
)
DROP = f"DROP INDEX IF EXISTS {HELD_INDEX}"


class Migration(migrations.Migration):
    dependencies = [
        ("claims", "0005_fleet_snapshot"),
    ]

    operations = [
        migrations.RunSQL(CREATE, reverse_sql=DROP),
    ]
